"""The host side's files: what the host did between and during the iterations (the host switches: with_stack,
gc_detect_threshold, host_sys, host_sys_usage, profile_memory, msproftx).

One exporter, writing only what a switch recorded: ``reports.host.write`` (``host_sys``, ``profile_memory``,
``msproftx``: CANN's host usage CSVs, peak memory per iteration, the markers' summary),
``reports.host.stack_files`` (``with_stack``, ``gc_detect_threshold``: the collapsed stacks, the GC
pauses CSV), and the one host timeline of them all (``reports.host.trace_file``). They are text outputs;
a failure in any part is one warning, since the step trace, the other reports and the other parts
stand without it.
"""
from __future__ import annotations

import warnings

from npu_tf_profiling.reports.encoders.chrome_trace import Event
from npu_tf_profiling.reports.exporters import Exporter, ExportJob
from npu_tf_profiling.reports.report_paths import ReportPaths


def _write_host_usage(job: ExportJob, out: ReportPaths) -> list[Event]:
    from npu_tf_profiling.reports.host.write import write_host_reports

    try:
        paths, events = write_host_reports(job.prof_dir, job.timestamp, job.data.table if job.data is not None else None, out.notes)
    except Exception as exc:  # noqa: BLE001 - the host reports never cost the user the others
        warnings.warn(f"{job.prof_dir}: host reports not written: {exc!r}", RuntimeWarning, stacklevel=3)
        return []
    out.extend(paths)
    return events


def _write_host_python(job: ExportJob, out: ReportPaths) -> list[Event]:
    if job.data is None:
        return []
    from npu_tf_profiling.reports.host.stack_files import host_files_note, write_host_files

    try:
        paths, events = write_host_files(job.data, job.timestamp)
    except Exception as exc:  # noqa: BLE001 - the extra files never cost the user their reports
        warnings.warn(f"{job.prof_dir}: host stack / GC files not written: {exc!r}", RuntimeWarning, stacklevel=3)
        return []
    out.extend(paths)
    note = host_files_note(paths)
    if note:
        out.notes.append(note)
    return events


def _write_host(job: ExportJob, out: ReportPaths) -> None:
    from npu_tf_profiling.raw_format import layout
    from npu_tf_profiling.reports.host.trace_file import write_host_trace

    events = _write_host_usage(job, out) + _write_host_python(job, out)
    try:
        path = write_host_trace(layout.report_dir(job.prof_dir), job.timestamp, job.data.table if job.data is not None else None, events)
    except Exception as exc:  # noqa: BLE001 - the CSVs and stacks stand without the timeline
        warnings.warn(f"{job.prof_dir}: host timeline not written: {exc!r}", RuntimeWarning, stacklevel=2)
        return
    if path is not None:
        out.extend([path])


EXPORTER = Exporter("host", "text", _write_host)
