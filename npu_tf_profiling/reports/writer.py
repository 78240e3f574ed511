"""Every report of one PROF folder, through the exporters (``reports.exporters``); the runtime calls this at close.

``write_all_reports`` loads the raw data once and hands it to each exporter in
turn: the step trace CSV/JSON, the task files, the ranks' msprof-analyze
folders, TensorBoard scalars. It reads the run's own options from info.json
(``timeline_slice_mb``, ``export_type``) with each option's validator. Files
are written to a temporary name in the same folder and moved into place with
``os.replace``, so a reader (or a crash mid-write) never sees half a report,
and rewriting a report (same ``<ts>``) replaces it in one step.
"""
from __future__ import annotations

import threading
import warnings
from pathlib import Path
from typing import Any, Optional

from npu_tf_profiling.raw_format import layout
from npu_tf_profiling.reports.errors import NothingFoundError
from npu_tf_profiling.reports.exporters.step_trace import write_step_trace_files
from npu_tf_profiling.reports.report_paths import ReportPaths
from npu_tf_profiling.reports.prof_dir import ProfData, check_timestamp, load_prof_dir, report_timestamp
from npu_tf_profiling.reports.encoders.trace_slices import DEFAULT_SLICE_BYTES, MIB


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
    (or CANN's slices ``msprof_slice_0_<ts>.json``, ``_1``... when larger than
    ``timeline_budget_bytes``, default 200 MiB); ``step_trace_<ts>.json`` is
    sliced above ``slice_bytes`` (default: the run's ``timeline_slice_mb``
    option, else 200 MiB; ``trace_slices``); and, beside the PROF folder,
    each rank's msprof-analyze / MindStudio Insight folder (``reports.msprof``,
    ``docs/msprof_layout.md``; in ``.layout_folders``); and with the
    ``"tensorboard"`` option, the step phases as TensorBoard scalars in that
    logdir (``reports.exporters.tensorboard``). The ``export_type`` option
    (``export_types``) leaves out the text files ("db") or the ranks'
    databases ("text"), as torch_npu's does. Returns the paths, with
    ``.notes`` to print. Raises ``NothingFoundError`` when the folder has
    neither training_trace records nor task data, ``BadInputError`` as
    ``load_prof_dir`` does; torn/corrupt raw data is skipped with a
    ``RawDataWarning``.
    """
    from npu_tf_profiling.reports.exporters import ExportJob, exporters
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
    budget = msprof_timeline.DEFAULT_BUDGET_BYTES if timeline_budget_bytes is None else timeline_budget_bytes
    job = ExportJob(prof_dir, data, ts, slice_bytes, budget, export_types(data))
    out = ReportPaths()
    if "text" not in job.exports:
        out.notes.append(f"export_type {','.join(sorted(job.exports))}: the text reports (step_trace, task_time, op_summary, "
                         f"op_statistic CSV and timeline JSON) not written; the ranks' databases hold the data")
    # An exporter marked `beside` (the ranks' databases: ADBC's ingest runs outside the GIL) is written on a
    # second thread while the others are: 16.0 s -> 10.3 s for `report` at 1M iterations (benchmarks/RESULTS.md).
    wanted = [exporter for exporter in exporters() if exporter.wanted(job)]
    beside = [(exporter, ReportPaths()) for exporter in wanted if exporter.beside]
    failed: list[BaseException] = []
    thread = threading.Thread(target=_write_each, args=(job, beside, failed), name="npu_tf_profiling reports") if beside else None
    if thread is not None:
        try:
            thread.start()
        except RuntimeError:  # no new thread (the interpreter is shutting down, Python 3.12+): after the others
            thread = None
    try:
        _write_each(job, [(exporter, out) for exporter in wanted if not exporter.beside])
    finally:
        if thread is not None:
            thread.join()
    if thread is None:
        _write_each(job, beside)
    if failed:
        raise failed[0]
    for _, side in beside:  # after the others, whatever finished first: the same order every time
        out.extend(side)
        out.notes.extend(side.notes)
        out.layout_folders.extend(side.layout_folders)
    return out


def _write_each(job: Any, exporters_and_outs: list[tuple[Any, ReportPaths]], failed: Optional[list[BaseException]] = None) -> None:
    """Write each exporter's output; on a thread (`failed` given), an error is kept for the caller to raise."""
    try:
        for exporter, out in exporters_and_outs:
            exporter.write(job, out)
    except BaseException as exc:  # handed to the caller's thread, which raises it
        if failed is None:
            raise
        failed.append(exc)


def _run_option(data: Optional[ProfData], key: str) -> Any:
    """The option ``key`` the run was profiled with (info.json), checked as the option is; None when not given.

    info.json was validated when the run started, but it is a file a user may
    edit: the value is re-checked by the option's own validator (so the reports
    accept exactly what the option does), and a bad one is a warning, not a crash.
    """
    from npu_tf_profiling.config.errors import ProfilingOptionsError
    from npu_tf_profiling.config.option_specs import SPEC_BY_KEY

    for device in data.devices if data is not None else ():
        value = device.info.option(key)
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
