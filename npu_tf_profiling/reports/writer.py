"""Write ``mindstudio_profiler_output/step_trace_<ts>.csv`` and ``.json`` for a PROF folder.

``write_all_reports`` also writes the task files when the folder has
task_trace data (``task_reports``): task_time/op_summary/op_statistic CSVs
and the msprof timeline(s); and, with the ``"tensorboard"`` option, the
step phases as TensorBoard scalars.

One CSV and one JSON per PROF folder, holding every device of it (rows carry
``Device_id``; the timeline has one process per device). Files are written to
a temporary name in the same folder and moved into place with ``os.replace``,
so a reader (or a crash mid-write) never sees half a report, and rewriting a
report (same ``<ts>``) replaces it in one step.
"""
from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any, Optional

from npu_tf_profiling.raw_format import layout
from npu_tf_profiling.reports.errors import NothingFoundError
from npu_tf_profiling.reports.report_paths import ReportPaths
from npu_tf_profiling.reports.prof_dir import ProfData, check_timestamp, load_prof_dir, report_timestamp
from npu_tf_profiling.reports.step.table import write_step_trace_csv
from npu_tf_profiling.reports.step.timeline import write_step_trace_json
from npu_tf_profiling.reports.trace_slices import DEFAULT_SLICE_BYTES, MIB

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


def write_step_trace_reports(prof_dir: Path | str, timestamp: Optional[str] = None) -> list[Path]:
    """(Re)build ``step_trace_<ts>.csv`` and ``.json`` of one PROF folder from its raw data.

    ``timestamp`` (``YYYYmmddHHMMSS``) defaults to the one in the PROF folder's
    name, so calling this again overwrites the same two files. Raises
    ``BadInputError`` / ``NothingFoundError`` (see ``prof_dir.load_prof_dir``);
    torn or corrupt raw lines are skipped with a ``RawDataWarning``.
    """
    return write_step_trace_files(load_prof_dir(prof_dir), timestamp)


def write_all_reports(
    prof_dir: Path | str,
    timestamp: Optional[str] = None,
    *,
    timeline_budget_bytes: Optional[int] = None,
    slice_bytes: Optional[int] = None,
) -> ReportPaths:
    """(Re)build every report of one PROF folder from its raw data; the runtime calls this at close.

    Always the step_trace CSV/JSON when there are training_trace records;
    plus, when some device has a ``task_trace.bin``: ``task_time_<ts>.csv``,
    ``op_summary_<ts>.csv``, ``op_statistic_<ts>.csv`` and ``msprof_<ts>.json``
    (or ``msprof_<ts>_1.json``, ``_2``... when larger than
    ``timeline_budget_bytes``, default 200 MiB); ``step_trace_<ts>.json`` is
    sliced above ``slice_bytes`` (default: the run's ``timeline_slice_mb``
    option, else 200 MiB; ``trace_slices``); and, beside the PROF folder,
    each rank's msprof-analyze / MindStudio Insight folder (``reports.msprof``,
    ``docs/msprof_layout.md``; in ``.layout_folders``); and with the
    ``"tensorboard"`` option, the step phases as TensorBoard scalars in that
    logdir (``reports.tensorboard_events``). The ``export_type`` option
    (``export_types``) leaves out the text files ("db") or the ranks'
    databases ("text"), as torch_npu's does. Returns the paths, with
    ``.notes`` to print. Raises ``NothingFoundError`` when the folder has
    neither training_trace records nor task data, ``BadInputError`` as
    ``load_prof_dir`` does; torn/corrupt raw data is skipped with a
    ``RawDataWarning``.
    """
    from npu_tf_profiling.reports.task import files as task_reports
    from npu_tf_profiling.reports.task import timeline as msprof_timeline

    prof_dir = Path(prof_dir)
    ts = check_timestamp(timestamp) if timestamp is not None else report_timestamp(prof_dir)
    try:
        data: Optional[ProfData] = load_prof_dir(prof_dir)
    except NothingFoundError:
        if not task_reports.has_task_data(prof_dir):
            raise
        data = None
    if slice_bytes is None:
        slice_bytes = DEFAULT_SLICE_BYTES if data is None else _option_slice_bytes(data)
    exports = export_types(data)
    text = "text" in exports
    out = ReportPaths(write_step_trace_files(data, ts, slice_bytes) if data is not None and text else [])
    if len(out) > 2:
        out.notes.append(f"step trace timeline: {len(out) - 1} slices of at most {slice_bytes / MIB:g} MiB "
                         f"({out[1].name} ... {out[-1].name}), split between iterations; each opens on its own")
    if not text:
        out.notes.append(f"export_type {','.join(sorted(exports))}: the text reports (step_trace, task_time, op_summary, "
                         f"op_statistic CSV and timeline JSON) not written; the ranks' databases hold the data")
    if not task_reports.has_task_data(prof_dir):
        out.notes.extend(task_reports.untraced_notes(data) if data is not None else [])
    elif text:
        budget = msprof_timeline.DEFAULT_BUDGET_BYTES if timeline_budget_bytes is None else timeline_budget_bytes
        result = task_reports.write_task_files(prof_dir, data, ts, budget)
        out.extend(result.paths)
        out.notes.extend(result.notes)
        out.timings = dict(result.timings)
    if data is not None:
        out.layout_folders = _write_msprof_layouts(data, out.notes, exports)
        _write_tensorboard_runs(data, out)
    return out


def _run_option(data: Optional[ProfData], key: str) -> Any:
    """The option ``key`` the run was profiled with (info.json), checked as the option is; None when not given.

    info.json was validated when the run started, but it is a file a user may
    edit: the value is re-checked by the option's own validator (so the reports
    accept exactly what the option does), and a bad one is a warning, not a crash.
    """
    from npu_tf_profiling.config.errors import ProfilingOptionsError
    from npu_tf_profiling.config.option_specs import SPEC_BY_KEY

    for device in data.devices if data is not None else ():
        options = device.info.get("options")
        value = options.get(key) if isinstance(options, dict) else None
        if value is None:
            continue
        try:
            return SPEC_BY_KEY[key].validate(key, value)
        except ProfilingOptionsError as exc:
            warnings.warn(f"{data.prof_dir}: {device.device_dir.name}/{layout.INFO_FILE}: {exc}; the default is used",
                          RuntimeWarning, stacklevel=3)
    return None


def _option_slice_bytes(data: ProfData) -> int:
    """The ``timeline_slice_mb`` option the run was profiled with, in bytes; CANN's default without one."""
    value = _run_option(data, "timeline_slice_mb")
    return DEFAULT_SLICE_BYTES if value is None else value * MIB


def export_types(data: Optional[ProfData]) -> frozenset[str]:
    """The ``export_type`` option (torch_npu's): which of "text" and "db" to write; both without one."""
    value = _run_option(data, "export_type")
    return frozenset(("text", "db") if value is None else value.split(","))


def _write_tensorboard_runs(data: ProfData, out: ReportPaths) -> None:
    """The ``"tensorboard": DIR`` option: the step phases as TensorBoard scalars (``reports.tensorboard_events``).

    The logdir is the one info.json's options hold (absolute since validation;
    a PROF folder is one process, so its devices share it). Like the msprof
    layout, a failure is a warning: the other reports are written already.
    """
    logdirs = [d.info["options"].get("tensorboard") for d in data.devices
               if isinstance(d.info.get("options"), dict) and isinstance(d.info["options"].get("tensorboard"), str)]
    if not logdirs:
        return
    from npu_tf_profiling.reports.tensorboard_events import write_runs

    try:
        runs = write_runs(data, Path(logdirs[0]))
    except Exception as exc:  # noqa: BLE001 - the scalars never cost the user their reports
        warnings.warn(f"{data.prof_dir}: TensorBoard scalars not written to {logdirs[0]}: {exc}", RuntimeWarning, stacklevel=3)
        return
    out.extend(run.path for run in runs)
    out.notes.append(f"TensorBoard: {len(runs)} run(s) of step phases in {logdirs[0]} ({', '.join(r.run for r in runs)}); "
                     f"open with: tensorboard --logdir {logdirs[0]}")


def _write_msprof_layouts(data: ProfData, notes: list[str], exports: frozenset[str]) -> list[Path]:
    """The msprof-analyze / MindStudio Insight folders (``reports.msprof``); a failure there is a warning.

    Our own reports are already written by then and stay valid, so an error in
    the extra layout must not turn the whole report into a failure.
    """
    from npu_tf_profiling.reports.msprof.writer import write_prof_dir_layouts

    try:
        return write_prof_dir_layouts(data, notes, exports)
    except Exception as exc:  # noqa: BLE001 - the extra layout never costs the user their reports
        warnings.warn(f"{data.prof_dir}: msprof-analyze layout not written: {exc!r}", RuntimeWarning, stacklevel=3)
        return []
