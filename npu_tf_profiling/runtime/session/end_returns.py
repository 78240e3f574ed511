"""The iteration end's self-check on the Session path: the host return of a session's sampled runs.

A Session's Iteration End is the op discovery takes as the step (`graph_points/iteration_end.py`):
the train op the script fetches, or, with no train_op collection, the sink running the most
optimizer updates. A run may run more than that op waits on: a GAN written for TF1 fetching its two
train ops in one `sess.run`, or a slow side op fetched next to the step. Its rows then end early, in
order, and only the host can tell (`runtime/end_check.py`, the check TF2 steps have too).

The recorder checks a run (polls the collection, takes its clock around the run) every so often
anyway; while this sample is open (runs 1 to SKIP_RUNS + SAMPLE_RUNS of the session), every run is
checked, and the clock read it already takes after the run is its return. So the only cost is those
22 runs' check (a collection poll, microseconds), and nothing after them. The returns wait in a deque
until a drain (under the recorder's drain lock, mostly the reader thread's) matches them with the rows.
"""
from __future__ import annotations

import collections
from typing import Any, Protocol

import numpy as np

from npu_tf_profiling.raw_format.layout import K_ITERATION_END_CHECK
from npu_tf_profiling.runtime.end_check import SAMPLE_RUNS, SESSION_REMEDY, SKIP_RUNS, EndCheck

SESSION_STEP = "sess.run"  # the note's "Iteration End of {function}": a Session's step is its training run


class _Source(Protocol):
    def note(self, message: str) -> None: ...


class SessionEndCheck:
    """One session's sample of run returns, and the graph's check they feed (see the module docstring)."""

    def __init__(self, iteration_end: str) -> None:
        self.check = EndCheck(SESSION_STEP, iteration_end, remedy=SESSION_REMEDY)
        self._returns: collections.deque[tuple[int, float]] = collections.deque()

    def sampling(self, run: int) -> bool:
        """Whether run number `run` (the session's count, as its rows') is still one the sample wants."""
        return not self.check.decided and run <= SKIP_RUNS + SAMPLE_RUNS

    def returned(self, run: int, end_s: float) -> None:
        """From the training thread: run `run` returned at `end_s` (time.time()). A deque append, no lock."""
        self._returns.append((run, end_s * 1e6))

    def add_rows(self, runs: np.ndarray, ends_us: np.ndarray) -> bool:
        """Under the drain lock: the rows read (session run numbers, Iteration End in µs), with the returns
        taken so far. True once, when the check has just decided."""
        if self.check.decided:
            return False
        returns = []
        while self._returns:
            returns.append(self._returns.popleft())
        self.check.add_returns(returns)
        self.check.add_rows(runs, ends_us)
        return self.check.decided

    def apply(self, run: Any, model: Any, source: _Source) -> None:
        """The decided check into the model's info.json entry in `run`, and its warning once."""
        run.note_model(model, K_ITERATION_END_CHECK, self.check.result)
        if self.check.note is not None:
            source.note(self.check.note)
