"""One PROF_* folder: this process's profiling data for one output directory.

Several sessions (and graphs) in one process share it: each distinct training
graph becomes a Model ID, and every traced iteration is one appended record.
Reports are (re)built when a session closes and once more at interpreter exit.
"""
from __future__ import annotations

import atexit
import json
import os
import platform
import socket
import sys
import threading
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from npu_tf_profiling.raw_format import layout
from npu_tf_profiling.config import Resolution
from npu_tf_profiling.config.notices import warn_user
from npu_tf_profiling.config.resolution import ignored_env_note
from npu_tf_profiling.runtime.device import device_id as current_device_id
from npu_tf_profiling.runtime.device import rank_size
from npu_tf_profiling.runtime.host.collection import HostCollection
from npu_tf_profiling.raw_format.call_sites import CALL_SITES_FILE
from npu_tf_profiling.raw_format.other_runs import encode_other_run
from npu_tf_profiling.raw_format.task_record import frame_task_record
from npu_tf_profiling.raw_format.append_writer import AppendOnlyWriter, StorageBudget
from npu_tf_profiling.raw_format.atomic import atomic_write_json
from npu_tf_profiling.raw_format.prof_name import ProfName
from npu_tf_profiling.raw_format.run_info import RunInfo

OTHER_RUNS_BATCH = 256
OTHER_RUNS_FLUSH_S = 0.5


@dataclass
class ModelEntry:
    """A training graph in this PROF_* folder: its Model ID and trace points.

    `trace_points` is the info.json entry: TracePoints.to_dict(), plus, when a
    user-given point was not used, `trace_points_fallback`:
    {"fp_point": {"asked": ..., "used": ..., "reason": ...}, "bp_point": {...}}
    ("used" is the op the probes time, None when there is none).
    """

    model_id: int
    trace_points: dict[str, Any]


@dataclass
class ProfilingRun:
    resolution: Resolution
    device_id: int
    prof_dir: Path
    started_us: int
    device_kind: str
    models: dict[str, ModelEntry] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._report_notes_shown: set[str] = set()
        self._other_totals: dict[str, dict[str, float]] = {}  # kind -> count, time_us of the runs between steps
        self._pending_others: list[tuple] = []  # other_runs.jsonl lines not written yet (`record_other_run`)
        self._others_due = 0.0
        self._budget = StorageBudget(self.resolution.options.storage_limit_bytes)
        self._trace = AppendOnlyWriter(layout.training_frames_path(self.prof_dir, self.device_id), self._budget)
        self._tasks = AppendOnlyWriter(layout.task_trace_path(self.prof_dir, self.device_id), self._budget)
        self._xspaces = AppendOnlyWriter(layout.xspace_path(self.prof_dir, self.device_id), self._budget)
        self._others = AppendOnlyWriter(layout.other_runs_path(self.prof_dir, self.device_id), self._budget)
        self._anomalies = AppendOnlyWriter(layout.anomalies_path(self.prof_dir, self.device_id), self._budget)
        self._closed_us: int | None = None
        self._cpu_first: tuple[float, float] | None = None  # (epoch µs, process CPU s) at the first trace batch
        self._cpu_last: tuple[float, float] | None = None
        for writer in self._writers:
            writer.on_recreated = self._write_info  # info.json went with the folder a deletion took
        self._write_info()
        self._announce()
        # with_stack, gc_detect_threshold, host_sys, host_sys_usage, profile_memory, msproftx (runtime/host/):
        # nothing starts unless asked for.
        self._host = HostCollection(self.resolution.options, self.prof_dir, self.device_id, self._budget, self.device_kind,
                                    self.add_note)

    # ----- collection ---------------------------------------------------------------------
    @property
    def _writers(self) -> tuple[AppendOnlyWriter, ...]:
        return self._trace, self._tasks, self._xspaces, self._others

    @property
    def collecting(self) -> bool:
        return all(writer.stopped_reason is None for writer in self._writers)

    def register_model(self, key: str, trace_points: dict[str, Any], op_types: dict[str, str] | None = None) -> ModelEntry:
        """The model registered under `key` (the caller decides which graphs share one), made on first use.

        `op_types` (task_trace only) is saved for the offline reports.
        """
        with self._lock:
            entry = self.models.get(key)
            if entry is None:
                entry = ModelEntry(model_id=len(self.models) + 1, trace_points=trace_points)
                self.models[key] = entry
                self._write_info()
                if op_types is not None:
                    path = layout.graph_ops_path(self.prof_dir, self.device_id, entry.model_id)
                    try:
                        atomic_write_json(path, op_types)
                    except OSError as exc:
                        warnings.warn(f"npu_tf_profiling: cannot write {path}: {exc}", RuntimeWarning, stacklevel=2)
            return entry

    def note_model(self, entry: ModelEntry, key: str, value: Any) -> None:
        """A fact about a model found while it trains (what it feeds, the iteration end's self-check): info.json's
        ``models[id][key]``, written now."""
        with self._lock:
            entry.trace_points[key] = value
            self._write_info()

    def record_trace_frame(self, frame: bytes) -> None:
        """A batch of training_trace records, already encoded (`raw_format.training_frame`).

        Also the process's CPU clock at the first batch and at the latest (two clock reads a drain, off the
        training thread): `advise` bounds what more parallelism can gain by the cores left idle."""
        self._trace.append(frame)
        now = (time.time() * 1e6, time.process_time())
        if self._cpu_first is None:
            self._cpu_first = now
        self._cpu_last = now

    def record_tasks(self, model: ModelEntry, run: int, step: int | None, step_stats: bytes, run_start_us: float, run_end_us: float) -> None:
        """One task_trace record: the raw StepStats of iteration `run`."""
        self._tasks.append(frame_task_record(_task_header(model, run, step, run_start_us, run_end_us), step_stats))

    def record_xspace(self, calls: list[tuple[ModelEntry, int, float, float]], anchors_us: tuple[float, float], xspace: bytes) -> None:
        """One TensorFlow 2 task window: tf.profiler's XSpace as it came, and its calls (model, run, start, end)."""
        header = {layout.K_ANCHORS: [round(a, 1) for a in anchors_us],
                  layout.K_CALLS: [_task_header(model, run, None, start, end) for model, run, start, end in calls]}
        self._xspaces.append(frame_task_record(header, xspace, layout.XSPACE_MAGIC))

    def record_other_run(self, start_us: float, end_us: float, kind: str, name: str | None = None,
                         details: dict | None = None) -> None:
        """A session run or tf.function call that was not a training step (`raw_format.other_runs`);
        info.json keeps each kind's count and time (written with the next info update, and at close).

        Lines are written in batches (OTHER_RUNS_BATCH lines, or OTHER_RUNS_FLUSH_S after the first
        waiting one, and before reports and at close): a line each cost a small helper function ~45 µs
        a call (benchmarks/call_hook_cost.py). A kill loses at most that last batch of these lines."""
        with self._lock:
            if not self._pending_others:
                self._others_due = time.monotonic() + OTHER_RUNS_FLUSH_S
            self._pending_others.append((start_us, end_us, kind, name, details))
            totals = self._other_totals.setdefault(kind, {"count": 0, "time_us": 0.0})
            totals["count"] += 1
            totals["time_us"] = round(totals["time_us"] + (end_us - start_us), 1)
            due = len(self._pending_others) >= OTHER_RUNS_BATCH or time.monotonic() >= self._others_due
        if due:
            self.flush_other_runs()

    def flush_other_runs(self) -> None:
        """Write the other runs' lines still waiting, with one os.write."""
        with self._lock:
            lines, self._pending_others = self._pending_others, []
        if lines:
            self._others.append(b"".join(encode_other_run(*line) for line in lines))

    def record_anomaly(self, entry: dict[str, Any]) -> None:
        """One anomaly_capture line (`runtime.anomaly_watch`): a capture and what its iterations were."""
        self._anomalies.append((json.dumps(entry, sort_keys=True) + "\n").encode())

    def write_call_sites(self) -> None:
        """call_sites.json: the user's lines `advise` names (``runtime.call_sites``), as recorded so far;
        not once the raw files stopped (a full disk, a read-only folder: they said why, once)."""
        from npu_tf_profiling.runtime import call_sites

        if not self.collecting:
            return
        path = layout.device_dir(self.prof_dir, self.device_id) / layout.DATA_DIR / CALL_SITES_FILE
        try:
            atomic_write_json(path, call_sites.payload())
        except Exception as exc:  # noqa: BLE001 - profiling must never hurt the job
            warnings.warn(f"npu_tf_profiling: cannot write {path}: {exc!r}", RuntimeWarning, stacklevel=2)

    def add_note(self, note: str) -> None:
        """A fact the user should see in info.json (and once as a warning)."""
        with self._lock:
            if note in self.notes:
                return
            self.notes.append(note)
            self._write_info()
        warn_user(f"npu_tf_profiling: {note}")

    # ----- metadata and reports -----------------------------------------------------------
    def _write_info(self) -> None:
        options, ignored = self.resolution.options, self.resolution.ignored_env
        info = RunInfo(
            options=options.to_dict(),
            source=self.resolution.source,
            output_dir=str(self.resolution.output_dir),
            not_collected={key: f"accepted, not collected on {self.device_kind}" for key in options.not_collected()},
            device_id=self.device_id,
            device_kind=self.device_kind,
            rank_id=self.device_id,
            rank_size=rank_size(),
            pid=os.getpid(),
            host=socket.gethostname(),
            python_version=platform.python_version(),
            tensorflow_version=_tensorflow_version(),
            start_time_us=self.started_us,
            models={str(m.model_id): m.trace_points for m in self.models.values()},
            notes=list(self.notes),
            other_runs_recorded=True,
            other_runs={kind: dict(value) for kind, value in self._other_totals.items()},
            closed_us=self._closed_us,  # `watch` tells a finished job from a running or killed one by it
            process_cpu=self._process_cpu(),
            env_ignored={"variables": dict(ignored), "reason": ignored_env_note(ignored, self.resolution.source)} if ignored else None,
        )
        path = layout.device_dir(self.prof_dir, self.device_id) / layout.INFO_FILE
        try:
            atomic_write_json(path, info.to_json())
        except OSError as exc:
            warnings.warn(f"npu_tf_profiling: cannot write {path}: {exc}", RuntimeWarning, stacklevel=2)

    def _process_cpu(self) -> dict[str, Any] | None:
        first, last = self._cpu_first, self._cpu_last
        if first is None or last is None or last[0] <= first[0]:
            return None
        return {"first_us": round(first[0], 1), "first_cpu_s": round(first[1], 4), "last_us": round(last[0], 1),
                "last_cpu_s": round(last[1], 4), "cores": _usable_cores()}

    def _announce(self) -> None:
        """One note per key the user set that nothing collects here (the default set's are not theirs)."""
        options = self.resolution.options
        if options.is_default_set:
            return
        for key in options.not_collected():
            warn_user(f"npu_tf_profiling: option '{key}' accepted, not collected on {self.device_kind}")

    def write_reports(self, quiet: bool = False) -> list[Path]:
        """Build every report from the raw data; a failure is a warning, never fatal.

        `quiet`: a report written while the job runs (a window's cycle ended) prints no notes: rows
        still in flight would make them say things the final report, which prints, no longer does.
        """
        self.flush_other_runs()
        self._host.flush()
        self.write_call_sites()
        if not any(writer.path.exists() for writer in (self._trace, self._tasks, self._xspaces)):  # iterations
            return []
        if _report_builder is None:
            return []
        try:
            written = _report_builder(self.prof_dir)
            for note in () if quiet else written.notes:
                if note not in self._report_notes_shown:  # once, though Estimators close sessions often
                    self._report_notes_shown.add(note)
                    sys.stderr.write(f"npu_tf_profiling: {note}\n")
            return list(written)
        except Exception as exc:  # noqa: BLE001 - profiling must never hurt the job
            message = (f"npu_tf_profiling: could not build reports for {self.prof_dir} ({exc!r}); "
                       f"run `npu-tf-prof report {self.prof_dir}` later")
            if message not in self._report_notes_shown:  # once: the session's close and the exit both try
                self._report_notes_shown.add(message)
                warnings.warn(message, RuntimeWarning, stacklevel=2)
            return []

    def close(self) -> None:
        self.flush_other_runs()
        self._host.close()
        for writer in (*self._writers, self._anomalies):
            writer.close()
        with self._lock:
            self._closed_us = int(time.time() * 1e6)
            self._write_info()  # the other runs' totals as they ended, and closed_us


def _usable_cores() -> int:
    """The cores this process may run on (its affinity: a container's or taskset's share), else the host's."""
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def _task_header(model: ModelEntry, run: int, step: int | None, run_start_us: float, run_end_us: float) -> dict[str, Any]:
    """A task_trace record's header (``raw_format.layout``): which iteration, and its call's span."""
    return {
        layout.K_MODEL_ID: model.model_id,
        layout.K_RUN: run,
        layout.K_STEP: step,
        layout.K_RUN_START: round(run_start_us, 1),
        layout.K_RUN_END: round(run_end_us, 1),
    }


# Builds every report of a PROF folder; returns the written paths, with `.notes` to print.
ReportBuilder = Callable[[Path], Any]
_report_builder: ReportBuilder | None = None


def set_report_builder(builder: ReportBuilder) -> None:
    """Hand the runtime the reports' entry point, so the runtime never imports the reports room.

    The package's top level (the composition root) wires it; data then flows one
    way, runtime -> raw files -> reports, and the reports stay importable
    without TensorFlow.
    """
    global _report_builder
    _report_builder = builder


def _tensorflow_version() -> str | None:
    module = sys.modules.get("tensorflow")
    return getattr(module, "__version__", None)


def _device_kind() -> str:
    try:
        import tensorflow as tf

        return "GPU" if tf.config.list_physical_devices("GPU") else "CPU"
    except Exception:  # noqa: BLE001
        return "CPU"


def new_prof_dir(output_dir: Path) -> tuple[Path, int]:
    now = time.time()
    return output_dir / str(ProfName.new(os.getpid(), now)), int(now * 1e6)


_RUNS: dict[Path, ProfilingRun] = {}
_ALL_RUNS: list[ProfilingRun] = []  # every run this process made, reported at exit
_RUNS_LOCK = threading.Lock()


def profiling_run_for(resolution: Resolution, fresh: bool = False) -> ProfilingRun:
    """The process's ProfilingRun for this output directory (created on first use).

    `fresh`: always start a new PROF_* folder (each dynamic collection gets its own).
    """
    with _RUNS_LOCK:
        run = None if fresh else _RUNS.get(resolution.output_dir)
        if run is None:
            prof_dir, started_us = new_prof_dir(resolution.output_dir)
            run = ProfilingRun(resolution, current_device_id(), prof_dir, started_us, _device_kind())
            if not _RUNS and not _ALL_RUNS:
                atexit.register(_finish_all)
            _RUNS[resolution.output_dir] = run
            _ALL_RUNS.append(run)
        elif run.resolution.options != resolution.options:
            run.add_note(
                f"a later session asked for different options ({resolution.options.to_json()}) with the same output; "
                f"the first session's options stay in force for {run.prof_dir}"
            )
        return run


def runs_started() -> bool:
    """Whether this process has made any PROF_* folder (a session took a profiling request)."""
    return bool(_ALL_RUNS)


_BEFORE_EXIT: list[Callable[[], None]] = []


def before_exit_reports(flush: Callable[[], None]) -> None:
    """Call `flush` at interpreter exit before the folders are closed and reported (data still in flight)."""
    _BEFORE_EXIT.append(flush)


def _finish_all() -> None:
    for flush in _BEFORE_EXIT:
        try:
            flush()
        except Exception as exc:  # noqa: BLE001 - profiling must never hurt the job
            warnings.warn(f"npu_tf_profiling: could not save the last records at exit ({exc!r})", RuntimeWarning, stacklevel=2)
    for run in list(_ALL_RUNS):
        run.close()
        run.write_reports()
