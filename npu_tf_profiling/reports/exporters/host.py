"""The host side's files: what the host did between and during the iterations (the host switches: with_stack,
gc_detect_threshold, host_sys, host_sys_usage, profile_memory, msproftx).

Two exporters, each written only when its switch recorded something:
``host_python`` (``with_stack``, ``gc_detect_threshold``: the collapsed
stacks, the GC pauses CSV, the host Python timeline; ``reports.host.stack_files``)
and ``host_usage`` (``host_sys``, ``profile_memory``, ``msproftx``: CANN's host
usage CSVs, peak memory per iteration, the markers; ``reports.host.write``).
They are text outputs; a failure in either is one warning, since the step
trace and the other reports stand without them.
"""
from __future__ import annotations

import warnings

from npu_tf_profiling.reports.exporters import Exporter, ExportJob
from npu_tf_profiling.reports.report_paths import ReportPaths


def _write_host_python(job: ExportJob, out: ReportPaths) -> None:
    if job.data is None:
        return
    from npu_tf_profiling.reports.host.stack_files import host_files_note, write_host_files

    try:
        paths = write_host_files(job.data, job.timestamp)
    except Exception as exc:  # noqa: BLE001 - the extra files never cost the user their reports
        warnings.warn(f"{job.prof_dir}: host stack / GC files not written: {exc!r}", RuntimeWarning, stacklevel=3)
        return
    out.extend(paths)
    note = host_files_note(paths)
    if note:
        out.notes.append(note)


def _write_host_usage(job: ExportJob, out: ReportPaths) -> None:
    from npu_tf_profiling.reports.host.write import write_host_reports

    try:
        out.extend(write_host_reports(job.prof_dir, job.timestamp, job.data.table if job.data is not None else None, out.notes))
    except Exception as exc:  # noqa: BLE001 - the host reports never cost the user the others
        warnings.warn(f"{job.prof_dir}: host reports not written: {exc!r}", RuntimeWarning, stacklevel=3)


HOST_PYTHON = Exporter("host_python", "text", _write_host_python)
HOST_USAGE = Exporter("host_usage", "text", _write_host_usage)
