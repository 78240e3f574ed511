"""What to collect right now: one PROF_* folder, which traces are on, and the iteration window.

A static request (session ConfigProto, env vars, NPURunConfig) is one Collection
for the life of the process. `PROFILING_MODE=dynamic` swaps Collections in and out
while the job runs (see `dynamic`).
"""
from __future__ import annotations

import dataclasses
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import numpy as np

from npu_tf_profiling.config import Resolution
from npu_tf_profiling.config.anomaly_capture import settings_of
from npu_tf_profiling.config.schedule import CollectionWindow, ScheduleAction
from npu_tf_profiling.raw_format.training_frame import RecordShape
from npu_tf_profiling.runtime.anomaly_watch import AnomalyWatch
from npu_tf_profiling.runtime.live_scalars import LiveScalars
from npu_tf_profiling.runtime.profiling_run import ProfilingRun, before_exit_reports, profiling_run_for
from npu_tf_profiling.runtime.ring_reader import drain_often

# Reports written at a cycle's end may take at most this share of the job's time;
# cycles that end sooner are covered by a later write (and by the one at close).
REPORT_TIME_SHARE = 0.01


@dataclass
class Collection:
    run: ProfilingRun
    training_trace: bool
    task_trace: bool
    window: CollectionWindow | None
    # A dynamic collection's owner closes it, and writes its reports, when its window ends.
    owner_closes: bool = False
    # anomaly_capture: task_trace armed by slow iterations (runtime.anomaly_watch); None when the option is off.
    anomaly: AnomalyWatch | None = None
    # the `tensorboard` option: scalars appended while the job runs (runtime.live_scalars)
    live: LiveScalars | None = None
    _next_report: float = field(default=0.0, repr=False)
    _saved_through: int = field(default=0, repr=False)

    @classmethod
    def start(cls, resolution: Resolution, fresh: bool = False) -> "Collection":
        """`fresh` (dynamic collections): a new PROF_* folder, and the window bounds every trace,
        since the whole point of a dynamic edit is to collect those iterations only."""
        options = resolution.options
        window = CollectionWindow.from_options(options)
        if fresh and window is not None:
            window = dataclasses.replace(window, applies_to_training_trace=True)
        run = profiling_run_for(resolution, fresh=fresh)
        settings = settings_of(options.anomaly_capture)
        anomaly = None
        if settings is not None:
            anomaly = AnomalyWatch(settings, run.record_anomaly)
            before_exit_reports(anomaly.close)
            drain_often()
        live = None
        if options.tensorboard is not None:
            live = LiveScalars(Path(options.tensorboard), run.device_id, run.prof_dir.name)
            before_exit_reports(live.close)
        return cls(
            run=run,
            training_trace=options.is_on("training_trace") or anomaly is not None,  # its detection reads the step trace
            task_trace=options.is_on("task_trace"),
            window=window,
            owner_closes=fresh,
            anomaly=anomaly,
            live=live,
        )

    @property
    def active(self) -> bool:
        return (self.training_trace or self.task_trace) and self.run.collecting

    @property
    def may_capture_tasks(self) -> bool:
        """Whether any iteration may get task_trace: asked for, or armed by anomaly_capture (its models keep their op types)."""
        return self.task_trace or self.anomaly is not None

    @property
    def captures_tasks(self) -> bool:
        """Whether the runs starting now should ask `wants` for task_trace: asked for, or armed right now."""
        return self.task_trace or (self.anomaly is not None and self.anomaly.armed)

    def wants(self, iteration_id: int) -> tuple[bool, bool]:
        """(record the step trace, capture the tasks) for this iteration."""
        in_window = self.window is None or self.window.records(iteration_id)
        probe = self.training_trace and (in_window or not self.window.applies_to_training_trace)
        tasks = self.task_trace and in_window
        if not tasks and self.anomaly is not None:
            tasks = self.anomaly.wants(iteration_id)
        return probe, tasks

    def recorded(self, model_id: int, shape: RecordShape, ids: np.ndarray, times_us: np.ndarray) -> None:
        """Rows of one model just recorded (on the ring reader thread, mostly): anomaly_capture watches
        them, and the `tensorboard` option's scalars get them now (`live_scalars`). A failure of the
        live scalars is one warning, and they stop."""
        if not len(ids):
            return
        if self.anomaly is not None:
            self.anomaly.observe(model_id, ids, times_us[:, -1])
        if self.live is not None:
            try:
                self.live.append(model_id, shape, ids, times_us)
            except Exception as exc:  # noqa: BLE001 - profiling must never hurt the job
                self.live = None
                warnings.warn(f"npu_tf_profiling: live TensorBoard scalars stopped ({exc!r}); they are written at exit",
                              RuntimeWarning, stacklevel=2)

    def trace_mask(self, iteration_ids: np.ndarray) -> np.ndarray:
        """Which of these iterations' step-trace rows to keep (all, unless the window bounds training_trace)."""
        window = self.window
        if window is None or not window.applies_to_training_trace:
            return np.ones(len(iteration_ids), dtype=bool)
        mask = iteration_ids >= window.start_step
        if window.stop_step is not None:
            mask &= iteration_ids <= window.stop_step
        for at in np.flatnonzero(mask):  # only inside the window's span: the cycle decides
            mask[at] = window.records(int(iteration_ids[at]))
        return mask

    def cycle_ended(self, iteration_ids: np.ndarray) -> None:
        """RECORD_AND_SAVE: when one of these iterations ends a schedule cycle, write the reports now.

        As torch.profiler's on_trace_ready, so a long job's windows can be read while
        it runs. The reports cover the whole folder, so writing them is kept under
        REPORT_TIME_SHARE of the job's time; the last cycle is always written at close.
        """
        window = self.window
        if window is None or not len(iteration_ids) or time.monotonic() < self._next_report:
            return
        ends = [int(i) for i in iteration_ids if i > self._saved_through and window.action(int(i)) is ScheduleAction.RECORD_AND_SAVE]
        if not ends or (self.owner_closes and self.done_after(ends[-1])):
            return  # nothing ended, or the window's end, where the owner writes them
        self._saved_through = ends[-1]
        started = time.monotonic()
        self.run.write_reports(quiet=True)
        self._next_report = time.monotonic() + (time.monotonic() - started) / REPORT_TIME_SHARE

    def done_after(self, iteration_id: int) -> bool:
        """True once the window has nothing left to record after this iteration."""
        return self.window is not None and self.window.finished_after(iteration_id)


class CollectionSource(Protocol):
    """Where a session gets the Collection in force: fixed (static request) or a DynamicController."""

    def poll(self) -> Collection | None: ...

    def after_iteration(self, iteration_id: int) -> None: ...

    def asked_points(self) -> dict[str, str]:
        """{"fp_point": ..., "bp_point": ...} of the request in force ("" = automatic)."""
        ...

    def note(self, message: str) -> None:
        """Tell the user a fact about what is profiled, where this source's user looks."""
        ...


@dataclass
class StaticSource:
    collection: Collection
    fp_point: str = ""
    bp_point: str = ""

    def poll(self) -> Collection | None:
        return self.collection

    def after_iteration(self, iteration_id: int) -> None:
        pass

    def asked_points(self) -> dict[str, str]:
        return {"fp_point": self.fp_point, "bp_point": self.bp_point}

    def note(self, message: str) -> None:
        """info.json's notes, and one warning at the user's line."""
        self.collection.run.add_note(message)
