"""GetNext for steps whose batch is read outside the function: the eager `next(iterator)` calls, timed on the host.

In ``for x, y in dataset: train_step(x, y)`` the step's graph has no read: its
batch is an argument, read by the iterator's eager ``__next__`` just before the
call. So once the process profiles TensorFlow 2 steps, the iterators' eager
reads are timed here (two clock reads and an append, under a microsecond), and
each call of a `tf.function` takes the reads made since the previous call of
any `tf.function`: a call of a watched step (one probed without a read in its
graph, `watch`) keeps them as its batch's read, any other call drops them
(they were an evaluation's, or a helper's input). A row then takes the batch of
the last call that started before its first stamp (`HostBatches.join`). Every
call is thus attributed on its own, whatever else the loop calls (a GAN's two
steps: the read goes to the first). The clock is the probes' (`tf.timestamp`
is the wall clock in seconds, as `time.time()`).

What is wrapped (TensorFlow's private methods; where one is missing it is left
alone, and that kind of iterator or call gives no host reads):
`OwnedIterator._next_internal` (``next()`` and ``get_next()`` of
``iter(dataset)``), `DistributedIterator.get_next` (a strategy's distributed
dataset; its replicas' reads nest inside its span) and `Function.__call__`
(which also tells `profiler_capture` when a step's call starts and ends, `call_ends` when it returned,
and `retraces`, in its frame's `started`, when the call that traces a step began).
Only eager reads count: the same methods run while a function is traced, and
that is a graph's read, timed in the graph.
"""
from __future__ import annotations

import collections
import importlib
import threading
import time
import weakref
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from npu_tf_profiling.runtime.tf_private import EAGER_CONTEXT_MODULE, FUNCTION_CALL_METHOD, HOST_READ_METHODS

MAX_PENDING_READS = 4096  # reads no call has taken yet (a long eager loop over data without a step)
MAX_BATCHES = 8192  # two rings' worth: a watched step's batches wait here for their rows' next drain (0.5 s)


HOST_READ_REASON = ("the graph reads no batch: GetNext is the eager iterator reads (next(), get_next()) made "
                    "since the previous tf.function call, before each call of this step")


@dataclass(eq=False)
class HostBatches:
    """A step's calls, in µs since the epoch: when each started, and the span of the reads it was given
    (NaN: none). Filled by the host's reads (`watch`) or by the function that calls the step
    (`reader.FunctionModel.fed_by`); `reason` says which, in info.json."""

    reason: str = HOST_READ_REASON
    calls: collections.deque = field(default_factory=lambda: collections.deque(maxlen=MAX_BATCHES))
    taken_through: float = -np.inf  # the latest call whose batch a row took (a batch is never given twice)

    def join(self, first_stamps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Each row's GetNext (start, end) in µs: its call's reads (the last call started before the
        row's first stamp), NaN where that call was given none or is not known. A batch is one
        step's: where several rows follow one call (a loop of steps in one call), the first takes
        it and the others get NaN, in this join and every later one."""
        begin = np.full(len(first_stamps), np.nan)
        end = np.full(len(first_stamps), np.nan)
        calls = np.array(list(self.calls), dtype=np.float64).reshape(-1, 3)
        if not len(calls):
            return begin, end
        calls = calls[np.argsort(calls[:, 0], kind="stable")]
        index = np.searchsorted(calls[:, 0], first_stamps, side="right") - 1
        known = (index >= 0) & ~np.isnan(first_stamps)
        chosen = calls[np.where(known, index, 0)]
        known &= (chosen[:, 2] <= first_stamps) & (chosen[:, 0] > self.taken_through)
        order = np.argsort(np.where(known, first_stamps, np.inf), kind="stable")
        _, first_of_each = np.unique(np.where(known, index, -1)[order], return_index=True)
        takers = np.zeros(len(first_stamps), dtype=bool)
        takers[order[first_of_each]] = True
        known &= takers
        begin[known], end[known] = chosen[known, 1], chosen[known, 2]
        if known.any():
            self.taken_through = max(self.taken_through, float(chosen[known, 0].max()))
        return begin, end


_reads: collections.deque[tuple[float, float]] = collections.deque(maxlen=MAX_PENDING_READS)
_watched: dict[int, tuple[weakref.ref, HostBatches]] = {}
_lock = threading.Lock()
_installed = False
_last_claim: tuple[int, tuple[float, float, float]] | None = None  # the latest call: its function and batch


def watch(function: Any, current_source: Callable[[], Any]) -> HostBatches | None:
    """Keep the reads given to each call of `function` (a `tf.function`); None when calls cannot be seen."""
    if function is None or not install_host_reads(current_source):
        return None
    with _lock:
        entry = _watched.get(id(function))
        if entry is not None and entry[0]() is function:
            return entry[1]
        batches = HostBatches()
        key = id(function)
        if _last_claim is not None and _last_claim[0] == key:  # the call being traced now: its batch too
            batches.calls.append(_last_claim[1])
        _watched[key] = (weakref.ref(function, lambda _ref: _watched.pop(key, None)), batches)
        return batches


def install_host_reads(current_source: Callable[[], Any]) -> bool:
    """Time the iterators' eager reads and the functions' calls from now on (idempotent); whether calls are seen.

    `current_source` gives the TensorFlow 2 request in force (`attach.current_source`), which decides whether a
    call that is not a step is timed (`other_runs.function_call`)."""
    global _installed
    with _lock:
        if not _installed:
            _installed = True
            context = importlib.import_module(EAGER_CONTEXT_MODULE)
            for module, owner, method in HOST_READ_METHODS:
                _wrap(module, owner, method, lambda original: _timed_read(original, context.executing_eagerly))
            _wrap(*FUNCTION_CALL_METHOD, lambda original: _claiming_call(original, context.executing_eagerly, current_source))
        return getattr(_owner(*FUNCTION_CALL_METHOD[:2]), FUNCTION_CALL_METHOD[2], None) is not None and _is_ours(*FUNCTION_CALL_METHOD)


def _owner(module: str, name: str) -> Any:
    try:
        return getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError):
        return None


def _is_ours(module: str, name: str, method: str) -> bool:
    return hasattr(getattr(_owner(module, name), method, None), "__npu_tf_profiling_wrapped__")


def _wrap(module: str, name: str, method: str, make: Callable[[Callable[..., Any]], Callable[..., Any]]) -> None:
    owner = _owner(module, name)
    original = getattr(owner, method, None)
    if original is None or hasattr(original, "__npu_tf_profiling_wrapped__"):
        return
    wrapper = make(original)
    wrapper.__wrapped__ = original  # type: ignore[attr-defined]
    wrapper.__npu_tf_profiling_wrapped__ = True  # type: ignore[attr-defined]
    setattr(owner, method, wrapper)


def _timed_read(original: Callable[..., Any], eager: Callable[[], bool]) -> Callable[..., Any]:
    def timed_read(*args: Any, **kwargs: Any) -> Any:
        if not eager():
            return original(*args, **kwargs)
        start = time.time()
        batch = original(*args, **kwargs)  # the end of the data raises: no read to count
        with _lock:
            _reads.append((start, time.time()))
        return batch

    return timed_read


def _claiming_call(original: Callable[..., Any], eager: Callable[[], bool],
                   current_source: Callable[[], Any]) -> Callable[..., Any]:
    from npu_tf_profiling.runtime import other_runs
    from npu_tf_profiling.runtime.functions.call_ends import call_ended
    from npu_tf_profiling.runtime.functions.profiler_capture import CAPTURE

    steps = CAPTURE.steps  # id(function) -> the probed steps (their calls are the iterations)

    def claiming_call(self: Any, *args: Any, **kwargs: Any) -> Any:
        if not eager():  # a call while a function is traced is a graph's
            return original(self, *args, **kwargs)
        started = time.time()  # noqa: F841 - read from this frame by `retraces` when the call traces its step
        if _reads or _watched:
            _claim(self)
        token = CAPTURE.before(self)  # task_trace's window (profiler_capture)
        try:
            if id(self) in steps:
                result = original(self, *args, **kwargs)
            else:  # not a step: timed as what else ran between steps (runtime.other_runs)
                result = other_runs.function_call(self, lambda: original(self, *args, **kwargs), current_source)
        finally:
            CAPTURE.after(token)
        call_ended(self)  # a probed step's calls are counted (call_ends)
        return result

    return claiming_call


def _claim(function: Any) -> None:
    """A call starts: the reads since the previous call are its batch's."""
    global _last_claim
    now = time.time()
    with _lock:
        reads = list(_reads)
        _reads.clear()
        call = (now * 1e6, min(r[0] for r in reads) * 1e6, max(r[1] for r in reads) * 1e6) if reads else (now * 1e6, np.nan, np.nan)
        _last_claim = (id(function), call)
        entry = _watched.get(id(function))
    if entry is not None and entry[0]() is function:
        entry[1].calls.append(call)
