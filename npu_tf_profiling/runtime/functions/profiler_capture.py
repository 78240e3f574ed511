"""task_trace for TensorFlow 2 steps: the window's calls captured with TensorFlow's own profiler.

A `tf.function` call gives no RunMetadata, so the per-op times of a profiled
step's calls come from `tf.profiler.experimental` (host tracer level 3: every
kernel run, with its thread; `HOST_TRACER_LEVEL` says why not 2). The profiler
runs only while the calls the collection wants tasks for run (`Collection.wants`, the window of
``start_step``/``stop_step``, or every step without one): it is started before
the first such call and stopped after the last, or every `CALLS_PER_SESSION`
calls, so its buffer stays bounded. At each stop its trace (an XSpace) is
written as it came to task_xspace.bin, one record per window with the window's
calls (model, run number, call and return times) and the epoch anchors: an
eager ``tf.timestamp()`` run at the start and at the stop, whose values are
read inside kernel runs the trace holds. The reports decode it offline, without
TensorFlow (``reports.task.xspace``): they place the trace's clock on the epoch
by those anchors and the probe kernels, and give each call the kernels that ran
between its call and its return, as the StepStats a Session's FULL_TRACE run
gives, so every task report reads both paths alike.

TensorFlow's profiler is process-wide: when the script runs one itself, the
window is not captured, and one note says so. Any failure here gives one
warning; training goes on.
"""
from __future__ import annotations

import glob
import os
import shutil
import tempfile
import threading
import time
import warnings
import weakref
from dataclasses import dataclass, field
from typing import Any

from npu_tf_profiling.runtime.profiler_quiet import profiler_lines_hidden
from npu_tf_profiling.runtime.profiling_run import before_exit_reports

CALLS_PER_SESSION = 50
# Level 3, not 2: level 2 records only the kernels TensorFlow's cost model counts as expensive (measured on
# an MLP step: 14 to 61 of its 379 kernels a call, varying call to call). Level 3 records every kernel
# run, as a Session's FULL_TRACE step stats do.
HOST_TRACER_LEVEL = 3
BUSY_NOTE = ("task_trace: TensorFlow's profiler was already running (the script's own tf.profiler?), so the TensorFlow 2 "
             "steps' tasks of this window were not captured")


@dataclass
class _Window:
    """One profiler session: where it writes, the epoch anchors, and the calls it saw."""

    folder: str
    anchors: list[float] = field(default_factory=list)  # eager tf.timestamp() values, µs
    calls: list[tuple[Any, Any, int, float, float]] = field(default_factory=list)  # (model, collection, run, start, end)


class TaskCapture:
    """Watches the probed steps' calls and captures the ones the collection wants tasks for."""

    def __init__(self) -> None:
        self.steps: dict[int, tuple[weakref.ref, Any]] = {}  # id(function) -> (the function, its model): the probed steps
        self._calls: dict[int, int] = {}  # id(function) -> calls seen
        self._window: _Window | None = None
        self._lock = threading.RLock()
        self._failed = False

    def watch(self, function: Any, model: Any) -> None:
        """Calls of `function` (a `tf.function`) are the iterations of `model` (a `reader.FunctionModel`)."""
        if function is None:
            return
        key = id(function)
        with self._lock:
            entry = self.steps.get(key)
            if entry is None or entry[0]() is not function:
                self._calls[key] = 1  # traced during its first call, whose start was not seen: that is run 1
            # A later trace's model replaces the earlier one: the first, variable-creating trace of a step
            # is a model of its own that never runs (tf.function traces it with another Python function).
            self.steps[key] = (weakref.ref(function, lambda _ref: self.steps.pop(key, None)), model)

    def before(self, function: Any) -> Any:
        """A call starts: the token `after` needs (None: nothing to capture).

        On every call of a profiled step, so the common case (no task_trace) is a count and two
        lookups, without the lock: calls of one step come from one thread (a Python loop, `fit`).
        """
        key = id(function)
        entry = self.steps.get(key)
        if entry is None or self._failed:
            return None
        run = self._calls[key] = self._calls.get(key, 0) + 1
        gate = entry[1].slow_gate
        if gate is not None:  # anomaly_capture's look: was the call just finished slow? (runtime.anomaly_watch)
            slow_s = gate.started(time.perf_counter())
            if slow_s:
                self._guarded(lambda: gate.hint(run - 1, slow_s))
        collection = entry[1].source.poll()
        if self._window is None and (collection is None or not collection.captures_tasks):
            return None
        with self._lock:
            wanted = collection is not None and collection.active and collection.wants(run)[1]
            if self._window is not None and (not wanted or len(self._window.calls) >= CALLS_PER_SESSION):
                self._guarded(self._stop)
            if not wanted:
                return None
            if self._window is None:
                self._guarded(lambda: self._start(collection))
            if self._window is None:
                return None
            return entry[1], collection, run, time.time() * 1e6

    def after(self, token: Any) -> None:
        if token is None:
            return
        with self._lock:
            if self._window is not None:
                self._window.calls.append((*token, time.time() * 1e6))

    def close(self) -> None:
        """At exit, or when the reader drains: the open window's calls are written."""
        with self._lock:
            if self._window is not None:
                self._guarded(self._stop)

    # ----- internals ---------------------------------------------------------------------------
    def _guarded(self, action: Any) -> None:
        try:
            action()
        except Exception as exc:  # noqa: BLE001 - profiling must never hurt the job
            self._failed = True
            folder, self._window = (self._window.folder if self._window else None), None
            if folder:
                shutil.rmtree(folder, ignore_errors=True)
            warnings.warn(f"npu_tf_profiling: task_trace of TensorFlow 2 steps stopped ({exc!r}); training continues",
                          RuntimeWarning, stacklevel=3)

    def _start(self, collection: Any) -> None:
        import tensorflow as tf

        folder = tempfile.mkdtemp(prefix="npu_tf_profiling_tf2_tasks_")
        try:
            with profiler_lines_hidden():  # TensorFlow's own five lines per window (runtime.profiler_quiet)
                tf.profiler.experimental.start(folder, options=tf.profiler.experimental.ProfilerOptions(host_tracer_level=HOST_TRACER_LEVEL))
        except Exception:  # noqa: BLE001 - the script's own profiler session holds it
            shutil.rmtree(folder, ignore_errors=True)
            collection.run.add_note(BUSY_NOTE)
            return
        self._window = _Window(folder)
        self._window.anchors.append(float(tf.timestamp().numpy()) * 1e6)

    def _stop(self) -> None:
        import tensorflow as tf

        window, self._window = self._window, None
        try:
            window.anchors.append(float(tf.timestamp().numpy()) * 1e6)
            with profiler_lines_hidden():
                tf.profiler.experimental.stop()
            (path,) = glob.glob(os.path.join(window.folder, "plugins", "profile", "*", "*.xplane.pb"))
            with open(path, "rb") as handle:
                space = handle.read()
        finally:
            shutil.rmtree(window.folder, ignore_errors=True)
        runs: dict[int, tuple[Any, list]] = {}  # one record per PROF folder the window's calls belong to
        for model, collection, run, start, end in window.calls:
            calls = runs.setdefault(id(collection.run), (collection.run, []))[1]
            calls.append((model.entry_in(collection), run, start, end))
        for profiling_run, calls in runs.values():
            profiling_run.record_xspace(calls, (window.anchors[0], window.anchors[-1]), space)


CAPTURE = TaskCapture()
before_exit_reports(CAPTURE.close)
