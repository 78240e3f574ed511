"""GetNext for a step whose batches its caller reads: each call's reads, given to that call's steps in order.

Keras 3's fit reads in ``multi_step_on_iterator`` and calls the probed step
``one_step_on_data`` (`callers`). With ``steps_per_execution`` = n, one call
reads the first batch before its loop, and each next one in a cond branch at
the end of the loop's body. TensorFlow runs that branch while the body's step
runs (nothing orders them), so the read of batch k+1 often starts before step k
does, and may end before step k's first stamp: "the last read before the row"
would give step k the wrong batch.

What is certain: one iterator's reads are sequential, and step k runs on batch
k. So the reads are grouped by the caller's call they ran in (the caller's own
row gives its call's first read and its end), and within a call the k-th step
(by its first stamp) takes the k-th read. A call that ran no step (the end of
an epoch reads an empty batch) gives its read to nobody, and a read is never
given to two steps.

The caller's row is written when its call ends, after its steps' rows: a
drain between the two would find steps whose call is not known yet. Those rows
wait for a later drain (`waiting`), at most PATIENCE_US, and at exit they go as
they are.
"""
from __future__ import annotations

import collections
from dataclasses import dataclass, field

import numpy as np

MAX_CALLS = 8192  # two rings' worth: a call's reads wait here for its steps' rows' next drain (0.5 s)
PATIENCE_US = 2e6  # a step row no known call holds waits this long for its caller's row (reader.WAIT_S)


@dataclass(eq=False)
class FedBatches:
    """The reads of the calls of the function that calls a step, in µs since the epoch."""

    reason: str
    calls: collections.deque = field(default_factory=lambda: collections.deque(maxlen=MAX_CALLS))  # (read start, read end, call end)
    reads: collections.deque = field(default_factory=lambda: collections.deque(maxlen=4 * MAX_CALLS))  # (start, end) in a loop
    taken: dict[float, int] = field(default_factory=dict)  # call (its read's start) -> steps that took a read of it

    def add_calls(self, starts: np.ndarray, ends: np.ndarray, call_ends: np.ndarray) -> None:
        """The caller's rows: each call's first read and when the call ended."""
        self.calls.extend(zip(starts.tolist(), ends.tolist(), call_ends.tolist()))

    def add_reads(self, starts: np.ndarray, ends: np.ndarray) -> None:
        """The rows of a branch that reads inside the caller's loop."""
        self.reads.extend(zip(starts.tolist(), ends.tolist()))

    def waiting(self, first_stamps: np.ndarray, now_us: float) -> np.ndarray:
        """Rows whose call is not known yet (its row not read) and that may still wait for it."""
        calls = self._calls()
        which = self._call_of(calls, first_stamps)
        return (which < 0) & (first_stamps > now_us - PATIENCE_US)

    def _calls(self) -> np.ndarray:
        return np.array(sorted(self.calls), dtype=np.float64).reshape(-1, 3)

    @staticmethod
    def _call_of(calls: np.ndarray, first_stamps: np.ndarray) -> np.ndarray:
        """Per row, the index of the call whose span holds its first stamp, -1 where none does."""
        which = np.searchsorted(calls[:, 1], first_stamps, side="right") - 1  # the last call whose first read ended before
        held = (which >= 0) & ~np.isnan(first_stamps)
        held[held] &= first_stamps[held] <= calls[which[held], 2]
        return np.where(held, which, -1)

    def join(self, first_stamps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Each row's GetNext (start, end): the k-th read of the call whose span holds its first stamp,
        for the call's k-th step; NaN where that call has no k-th read or no call holds the row."""
        begin = np.full(len(first_stamps), np.nan)
        end = np.full(len(first_stamps), np.nan)
        calls = self._calls()
        reads = np.array(sorted(self.reads), dtype=np.float64).reshape(-1, 2)
        which = self._call_of(calls, first_stamps)
        for row in np.argsort(first_stamps, kind="stable"):
            index = which[row]
            if index < 0:
                continue
            start, read_end, call_end = calls[index]
            inner = reads[(reads[:, 0] > start) & (reads[:, 0] < call_end)] if len(reads) else reads
            call_reads = [(start, read_end), *map(tuple, inner)]
            rank = self.taken.get(start, 0)
            if rank < len(call_reads) and call_reads[rank][1] <= first_stamps[row]:
                begin[row], end[row] = call_reads[rank]
                self.taken[start] = rank + 1
        if len(self.taken) > MAX_CALLS:  # the oldest calls' counts: their steps were all read long ago
            for start in sorted(self.taken)[: len(self.taken) - MAX_CALLS]:
                del self.taken[start]
        return begin, end
