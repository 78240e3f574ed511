"""``mindstudio_profiler_output/step_trace_<ts>.csv`` and ``.json`` (sliced when long) of one PROF folder.

One CSV and one JSON per PROF folder, holding every device of it (rows carry
``Device_id``; the timeline has one process per device), both built from the
same ``StepTraceTable`` so they always agree.
"""
from __future__ import annotations

from pathlib import Path
from typing import Optional

from npu_tf_profiling.raw_format import layout
from npu_tf_profiling.reports.exporters import Exporter, ExportJob
from npu_tf_profiling.reports.prof_dir import ProfData, check_timestamp, report_timestamp
from npu_tf_profiling.reports.report_paths import ReportPaths
from npu_tf_profiling.reports.step.table import write_step_trace_csv
from npu_tf_profiling.reports.step.timeline import write_step_trace_json
from npu_tf_profiling.reports.encoders.trace_slices import DEFAULT_SLICE_BYTES, MIB

STEP_TRACE_STEM = "step_trace"


def step_trace_paths(prof_dir: Path | str, timestamp: str) -> tuple[Path, Path]:
    """Where the CSV and JSON of ``prof_dir`` go for ``timestamp``."""
    out = layout.report_dir(Path(prof_dir))
    return out / f"{STEP_TRACE_STEM}_{timestamp}.csv", out / f"{STEP_TRACE_STEM}_{timestamp}.json"


def write_step_trace_files(data: ProfData, timestamp: Optional[str] = None, slice_bytes: int = DEFAULT_SLICE_BYTES) -> list[Path]:
    """Write the reports of already-loaded data; returns [csv, json] (or [csv, json slices...] for a long run)."""
    ts = check_timestamp(timestamp) if timestamp is not None else report_timestamp(data.prof_dir)
    csv_path, json_path = step_trace_paths(data.prof_dir, ts)
    write_step_trace_csv(data.table, csv_path)
    return [csv_path] + write_step_trace_json(data.table, json_path.parent, json_path.name, STEP_TRACE_STEM, ts, slice_bytes)


def _write(job: ExportJob, out: ReportPaths) -> None:
    if job.data is None:
        return
    paths = write_step_trace_files(job.data, job.timestamp, job.slice_bytes)
    out.extend(paths)
    if len(paths) > 2:
        out.notes.append(f"step trace timeline: {len(paths) - 1} slices of at most {job.slice_bytes / MIB:g} MiB "
                         f"({paths[1].name} ... {paths[-1].name}), split between iterations; each opens on its own")


EXPORTER = Exporter("step_trace", "text", _write)
