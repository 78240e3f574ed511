"""When each call of a probed training function ended, timed on the host: the rows of a step whose points never fire.

A function's row is written by the probes inside it, just before its iteration end
runs. Were that op one TensorFlow prunes from the function (it once was: a GAN's
dead-end gradient), no row would ever be written, and the job would end with no step
trace and no word. So the calls of each probed function are counted here, by the
call hook `host_reads` already puts around `Function.__call__`: the function's reader
(`reader.FunctionModel`) compares them with its ring's run counter, and after
`SILENT_CALLS` calls with no row it says so and records rows timed at the calls'
ends instead (Iteration Time, and GetNext where the batch is read before the call).
A call that raises (the end of the data) is not counted. Once a row is read, the
function is no longer watched, and its calls pay nothing for this.
"""
from __future__ import annotations

import collections
import itertools
import threading
import time
import weakref
from dataclasses import dataclass, field
from typing import Any

MAX_ENDS = 8192  # ends not yet taken as rows (two rings' worth, as host_reads keeps batches)
SILENT_CALLS = 3  # calls without a row before the function is said to write none


@dataclass(eq=False)
class CallEnds:
    """One function's completed calls: how many, and the ends (µs since the epoch) not yet taken as rows.

    `models`: the recordings whose probed graphs these calls may run, first traced first. Keras makes
    more than one training function in one `fit` (each a model of its own) while one `tf.function`
    object is called, so a function is silent only when none of them writes a row; the first then
    takes the calls as its rows. No lock on the call's path: `next()` of a count and a deque's append
    are atomic under the GIL.
    """

    key: int
    count: int = 0
    ends: collections.deque = field(default_factory=lambda: collections.deque(maxlen=MAX_ENDS))
    models: list = field(default_factory=list)
    stopped: bool = False  # a recording of its calls wrote a row: they are not counted any more
    _numbers: Any = None

    def __post_init__(self) -> None:
        self._numbers = itertools.count(self.count + 1)

    def ended(self, now_us: float) -> None:
        number = next(self._numbers)
        self.ends.append((number, now_us))
        self.count = number

    def take(self) -> list[tuple[int, float]]:
        """The (call number, end) pairs recorded since the last take."""
        taken = []
        while self.ends:
            taken.append(self.ends.popleft())
        return taken


_watched: dict[int, tuple[weakref.ref, CallEnds]] = {}
_lock = threading.Lock()


def watch_calls(function: Any, calls_before: int = 0) -> CallEnds | None:
    """Count the calls of `function` (a `tf.function`) from now on, after `calls_before` not seen (the
    call being traced, when the call hook was put in place inside it); None when it is not known."""
    if function is None:
        return None
    with _lock:
        entry = _watched.get(id(function))
        if entry is not None and entry[0]() is function:
            return entry[1]
        key = id(function)
        ends = CallEnds(key, count=calls_before)
        _watched[key] = (weakref.ref(function, lambda _ref: _watched.pop(key, None)), ends)
        return ends


def stop_watching(ends: CallEnds) -> None:
    """The function wrote rows: its calls need no counting any more (the call hook's cost goes back to nothing)."""
    with _lock:
        ends.stopped = True
        entry = _watched.get(ends.key)
        if entry is not None and entry[1] is ends:
            del _watched[ends.key]


def call_ended(function: Any) -> None:
    """From the call hook, after a call of `function` returned (one dict look-up for functions nobody watches)."""
    if not _watched:
        return
    entry = _watched.get(id(function))
    if entry is not None and entry[0]() is function:
        entry[1].ended(time.time() * 1e6)
