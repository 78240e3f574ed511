"""Write the task files of a PROF folder: task_time, op_summary, op_statistic and msprof timelines.

Called by ``writer.write_all_reports`` (the runtime at session close, and
``npu-tf-prof report``). One device folder is decoded at a time, so memory
follows the largest device, not the whole run. Every file goes to a temporary
name and is moved into place when complete, like the step_trace files.
"""
from __future__ import annotations

import time
import warnings
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import pandas as pd

from npu_tf_profiling.raw_format import layout
from npu_tf_profiling.raw_format.atomic import AtomicFile, atomic_write_text
from npu_tf_profiling.reports.task import timeline as mt
from npu_tf_profiling.reports.task import op_summary as ops
from npu_tf_profiling.reports.step import records as raw_mod
from npu_tf_profiling.reports.step import table as st
from npu_tf_profiling.reports.errors import BadInputError, RawDataWarning
from npu_tf_profiling.reports.prof_dir import ProfData
from npu_tf_profiling.reports.step.timeline import step_trace_events
from npu_tf_profiling.reports.task.table import TaskTable, load_device_tasks

TASK_TIME_STEM = "task_time"
OP_SUMMARY_STEM = "op_summary"
OP_STATISTIC_STEM = "op_statistic"


@dataclass
class TaskReportResult:
    paths: list[Path] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    tasks: int = 0
    # seconds per phase: "read" (decode + task table), "task_time", "summaries", "timeline"
    timings: dict[str, float] = field(default_factory=lambda: defaultdict(float))


def has_task_data(prof_dir: Path | str) -> bool:
    """Whether any device folder of ``prof_dir`` holds a non-empty task record file."""
    return any(path.stat().st_size > 0 for ddir in layout.device_dirs(Path(prof_dir)) for path in layout.task_trace_files(ddir))


def untraced_notes(data: ProfData) -> list[str]:
    """Notes for devices whose options asked for task_trace but that recorded no task data.

    Usually the collection window was never reached (the default window is
    iterations 11-15), which a user would otherwise only notice as missing files.
    """
    from npu_tf_profiling.config import CollectionWindow, ProfilingOptions, ProfilingOptionsError

    notes = []
    for device in data.devices:
        options = device.info.options
        if not options:
            continue
        try:
            parsed = ProfilingOptions.parse(options)
        except ProfilingOptionsError:
            continue
        if not parsed.is_on("task_trace"):
            continue
        window = CollectionWindow.from_options(parsed)
        n = 0 if device.trace is None else len(device.trace.frame)
        where = f"; {window.describe()}" if window is not None else ""
        notes.append(
            f"device {device.device_id}: task_trace is on but no iteration was traced "
            f"(no {layout.TASK_TRACE_FILE} data{where}; the step trace has {n} iteration(s))"
        )
    return notes


def task_paths(prof_dir: Path | str, timestamp: str) -> tuple[Path, Path, Path]:
    """Where task_time, op_summary and op_statistic CSVs go for ``timestamp``."""
    out = layout.report_dir(Path(prof_dir))
    return (
        out / f"{TASK_TIME_STEM}_{timestamp}.csv",
        out / f"{OP_SUMMARY_STEM}_{timestamp}.csv",
        out / f"{OP_STATISTIC_STEM}_{timestamp}.csv",
    )


def _iteration_times(table: st.StepTraceTable, device_id: int) -> pd.DataFrame:
    frame = table.frame
    rows = frame[frame[st.DEVICE_ID] == device_id]
    out = pd.DataFrame(
        {
            "model_id": rows[st.MODEL_ID].astype("int64").to_numpy(),
            "iteration_id": rows[st.ITERATION_ID_COL].astype("int64").to_numpy(),
            "iteration_time_us": rows[st.ITERATION_TIME].astype("float64").to_numpy(),
        }
    )
    return out


def device_task_table(device: raw_mod.DeviceRaw, step_table: st.StepTraceTable) -> Optional[TaskTable]:
    """One device's task table, its iterations timed by the step trace; None without task_trace.bin.

    The task files and the view (its top-ops chart) read tasks this one way,
    so their numbers agree. Raises ``BadInputError`` for an unreadable file.
    """
    try:
        return load_device_tasks(
            device.device_dir, device.device_id, device.info, device.trace, _iteration_times(step_table, device.device_id)
        )
    except OSError as exc:
        raise BadInputError(f"{device.device_dir}: cannot read {layout.TASK_TRACE_FILE}: {exc}") from exc


def _device_note(table: TaskTable) -> str:
    n_iter = int((table.iterations["n_tasks"] > 0).sum())
    parts = [f"device {table.device_id}: {len(table)} tasks in {n_iter} traced iteration(s)"]
    skipped = [f"{count} {kind}" for kind, count in table.skipped.items() if count]
    parts.append("skipped " + ", ".join(skipped) if skipped else "skipped no nodes")
    text = "; ".join(parts)
    if table.skipped_records:
        text += f"; {table.skipped_records} unusable part(s) of {layout.TASK_TRACE_FILE} (see the warning)"
    if table.unmatched_records:
        text += f"; {table.unmatched_records} traced iteration(s) without a training_trace record"
    return text


def write_task_files(
    prof_dir: Path | str,
    data: Optional[ProfData],
    timestamp: str,
    timeline_budget_bytes: int = mt.DEFAULT_BUDGET_BYTES,
) -> TaskReportResult:
    """Write task_time/op_summary/op_statistic CSVs and the msprof timeline(s) for ``prof_dir``.

    ``data`` is the loaded step trace (None when the folder has no
    training_trace records: the timeline then holds only tasks). Returns the
    written paths and the lines the report should print (tasks and skipped
    nodes per device; the split of the timeline).
    """
    prof_dir = Path(prof_dir)
    result = TaskReportResult()
    if data is not None:
        devices = data.devices
        step_table = data.table
    else:
        devices = []
        for ddir in layout.device_dirs(prof_dir):
            try:
                devices.append(raw_mod.read_device(ddir))
            except OSError as exc:
                raise BadInputError(f"{ddir}: cannot read raw data: {exc}") from exc
        step_table = st.empty_table()
    task_time_path, summary_path, statistic_path = task_paths(prof_dir, timestamp)
    out_dir = layout.report_dir(prof_dir)
    csv_file = AtomicFile(task_time_path)
    writer = mt.SplitTimelineWriter(out_dir, timestamp, timeline_budget_bytes)
    summaries: list[pd.DataFrame] = []
    statistics: list[pd.DataFrame] = []
    timings = result.timings
    try:
        csv_file.handle.write(ops.task_time_header())
        clock = time.perf_counter()
        max_tid = mt.add_step_trace(writer, step_trace_events(step_table)) if len(step_table) else {}
        timings["timeline"] += time.perf_counter() - clock
        for device in devices:
            clock = time.perf_counter()
            table = device_task_table(device, step_table)
            timings["read"] += time.perf_counter() - clock
            if table is None:
                continue
            clock = time.perf_counter()
            for text in ops.task_time_lines(table):
                csv_file.handle.write(text)
            timings["task_time"] += time.perf_counter() - clock
            clock = time.perf_counter()
            summaries.append(ops.op_summary_frame(table))
            statistics.append(ops.op_statistic_frame(table))
            timings["summaries"] += time.perf_counter() - clock
            clock = time.perf_counter()
            if not writer.has_process(table.device_id):
                writer.add_process(table.device_id, mt.process_events(table.device_id))
            mt.add_tasks(writer, table, max_tid.get(table.device_id, 0) + 1)
            timings["timeline"] += time.perf_counter() - clock
            result.tasks += len(table)
            result.notes.append(_device_note(table))
            del table
        result.paths.append(csv_file.commit())
        for path, frames, columns in (
            (summary_path, summaries, ops.OP_SUMMARY_COLUMNS),
            (statistic_path, statistics, ops.OP_STATISTIC_COLUMNS),
        ):
            atomic_write_text(path, ops.frames_to_csv(frames, columns))
            result.paths.append(path)
        clock = time.perf_counter()
        parts = writer.finish()
        timings["timeline"] += time.perf_counter() - clock
    except BaseException:
        csv_file.abort()
        writer.abort()
        raise
    result.paths.extend(parts.paths)
    if parts.split:
        mib = parts.budget_bytes / (1024 * 1024)
        result.notes.append(
            f"msprof timeline: {parts.total_events} events are more than one file of at most {mib:g} MiB holds; "
            f"split into {len(parts.paths)} files {parts.paths[0].name} ... {parts.paths[-1].name} "
            f"(events per file: {', '.join(map(str, parts.events))}; nothing left out)"
        )
    if data is None:
        warnings.warn(
            f"{prof_dir}: no training_trace records; task reports only (Iteration IDs from the task records)",
            RawDataWarning,
            stacklevel=2,
        )
    return result
