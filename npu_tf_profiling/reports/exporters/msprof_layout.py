"""Each rank's msprof-analyze / MindStudio Insight folder beside the PROF folder (``reports.msprof``).

Its text files and databases follow ``export_type`` inside ``write_rank_folder``
(the rank's index files are in both). A failure here is a warning: our own
reports are already written by then and stay valid, so an error in the extra
layout must not turn the whole report into a failure.
"""
from __future__ import annotations

import warnings

from npu_tf_profiling.reports.exporters import Exporter, ExportJob
from npu_tf_profiling.reports.report_paths import ReportPaths


def _write(job: ExportJob, out: ReportPaths) -> None:
    if job.data is None:
        return
    from npu_tf_profiling.reports.msprof.writer import write_prof_dir_layouts

    try:
        out.layout_folders = write_prof_dir_layouts(job.data, out.notes, job.exports)
    except Exception as exc:  # noqa: BLE001 - the extra layout never costs the user their reports
        warnings.warn(f"{job.prof_dir}: msprof-analyze layout not written: {exc!r}", RuntimeWarning, stacklevel=3)


# Beside the others: its databases' ADBC ingest (most of its time) runs outside the GIL, on the second core.
EXPORTER = Exporter("msprof_layout", None, _write, beside=True)
