"""The task files (``reports.task.files``): task_time, op_summary, op_statistic CSVs and the msprof timeline.

Always asked, because a run whose options asked for task_trace but that
recorded none gets a note saying why, whichever ``export_type`` was chosen.
"""
from __future__ import annotations

from npu_tf_profiling.reports.exporters import Exporter, ExportJob
from npu_tf_profiling.reports.report_paths import ReportPaths
from npu_tf_profiling.reports.task import files as task_reports


def _write(job: ExportJob, out: ReportPaths) -> None:
    if not task_reports.has_task_data(job.prof_dir):
        out.notes.extend(task_reports.untraced_notes(job.data) if job.data is not None else [])
        return
    if "text" not in job.exports:
        return
    result = task_reports.write_task_files(job.prof_dir, job.data, job.timestamp, job.timeline_budget_bytes)
    out.extend(result.paths)
    out.notes.extend(result.notes)
    out.timings = dict(result.timings)


EXPORTER = Exporter("task_files", None, _write)
