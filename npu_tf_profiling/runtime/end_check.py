"""The self-check of Iteration End: each sampled row's end against the host time its call returned.

Iteration End is the stamp after the op the step is taken to end with. Were that op one that does
not wait on all the step runs (a `tf.function` step that returns nothing once had its end at a sink
running 2 of 32 optimizer updates), every row would end early, and nothing in the rows could show it:
their stamps are all in order. The host knows better: a call cannot return before the step's last
op is done. So the recorders keep the host return time of a sample of calls (a TensorFlow 2 step's:
`call_ends`, the call hook's clock read, no more; a Session's runs: `session/end_returns`, the clock
read a checked run takes anyway), and a drain (the reader thread's, on the Session path mostly so)
compares them with the rows of the same calls. A call returns after its Iteration End by the time TensorFlow takes to
hand the outputs back to Python (a fraction of a millisecond: docs/design.md gives the measured
figure BOUND_US rests on); when 9 in 10 sampled calls return later than that, the end is early: one
warning while the job runs, and the figure and the point in info.json (the model's
`iteration_end_check`), whence `summary`'s point notes.

The 10th percentile, not the median: an early end makes every call return late by the work after it,
while a loaded host delays some returns by milliseconds (measured: a correct end's median 7 ms on two
cores shared by eight jobs, its iterations 20 times their unloaded time).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

SKIP_RUNS = 2  # the first calls trace and warm up: their returns are not the typical step's
SAMPLE_RUNS = 20
BOUND_US = 5000.0  # docs/design.md, "The iteration end's self-check": about 3x the worst median return latency measured
LOW_PERCENTILE = 10  # of the sample's gaps: "consistently" later, as an early end makes every call (see the docstring)
BOUND_SHARE = 0.05  # of the median iteration: a slow host's return latency grows with its step
TOO_EARLY_US = -500.0  # a call "returning" this long before its row's end: calls and runs are numbered differently
EARLY_NOTE = (
    "Iteration End of {function} ({end}) came {gap_ms:.1f} ms or more before 9 in 10 of its calls returned ({calls} calls checked; "
    "a call returns within {bound_ms:.1f} ms of its last op): that op does not wait on everything the step runs, "
    "so every row ends early and the time after it counts as the next iteration's. {remedy}"
)
FUNCTION_REMEDY = "Returning the step's losses, or anything that waits on its updates, from the function makes its end exact"
SESSION_REMEDY = ("Fetching, in the training runs, one op that groups everything they run (tf.group of the train ops) "
                  "makes its end exact")


@dataclass
class EndCheck:
    """One function's check: the host returns of its sampled calls, matched with its rows by run number."""

    function: str
    iteration_end: str
    remedy: str = FUNCTION_REMEDY  # the note's last sentence: how a script of this path makes the end exact
    result: dict[str, Any] | None = None  # once decided: the info.json entry
    note: str | None = None  # once decided early: the warning
    _returns: dict[int, float] = field(default_factory=dict)  # call number -> host return (µs)
    _ends: dict[int, float] = field(default_factory=dict)  # run number -> Iteration End (µs)

    @property
    def decided(self) -> bool:
        return self.result is not None

    def add_returns(self, returns: list[tuple[int, float]]) -> None:
        """(call number, host return in µs) pairs, as `call_ends` took them."""
        for number, end_us in returns:
            if SKIP_RUNS < number <= SKIP_RUNS + SAMPLE_RUNS:
                self._returns[number] = end_us
        self._decide_when_sampled()  # a call's row may be read before it returned: either may come last

    def add_rows(self, runs: np.ndarray, ends_us: np.ndarray) -> None:
        """Rows read: their run numbers and Iteration End (µs). Decides once the sample is complete."""
        for run, end_us in zip(runs.tolist(), ends_us.tolist()):
            if SKIP_RUNS < run <= SKIP_RUNS + SAMPLE_RUNS and end_us == end_us:
                self._ends[int(run)] = end_us
        self._decide_when_sampled()

    def _decide_when_sampled(self) -> None:
        if not self.decided and len(self._ends) == SAMPLE_RUNS and len(self._returns) == SAMPLE_RUNS:
            self._decide()

    def _decide(self) -> None:
        runs = sorted(self._ends)
        gaps = np.array([self._returns[r] - self._ends[r] for r in runs if r in self._returns])
        ends = np.array([self._ends[r] for r in runs])
        if len(gaps) < SAMPLE_RUNS or gaps.min() < TOO_EARLY_US:
            self.result = {"checked": False, "reason": "the calls and the rows could not be matched one to one "
                           "(calls that run several iterations, or iterations run outside a call)"}
            return
        low_gap, median_gap = float(np.percentile(gaps, LOW_PERCENTILE)), float(np.median(gaps))
        median_iteration = float(np.median(np.diff(ends)))
        bound = max(BOUND_US, BOUND_SHARE * median_iteration)
        early = low_gap > bound
        self.result = {"checked": True, "iteration_end": self.iteration_end, "calls": len(gaps),
                       "p10_return_after_end_us": round(low_gap, 1), "median_return_after_end_us": round(median_gap, 1),
                       "max_return_after_end_us": round(float(gaps.max()), 1),
                       "median_iteration_us": round(median_iteration, 1), "bound_us": round(bound, 1), "early": early}
        if early:
            self.note = EARLY_NOTE.format(function=self.function, end=self.iteration_end, gap_ms=low_gap / 1e3,
                                          calls=len(gaps), bound_ms=bound / 1e3, remedy=self.remedy)
            self.result["note"] = self.note
