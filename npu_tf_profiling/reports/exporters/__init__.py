"""One module per output of ``report``, each behind one small interface, in the way of pyinstrument's renderers.

An ``Exporter`` names its output and the ``export_type`` it belongs to
("text", "db", or None: decided inside, or not a torch_npu output) and writes
from one ``ExportJob``, adding its files and the lines a user should see to
the ``ReportPaths``. ``reports.writer.write_all_reports`` runs them in
``exporters()``' order: the step trace, the task files, the host files, the
ranks' msprof-analyze folders, TensorBoard. A new output is a new module and a line in ``exporters()``.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Optional

from npu_tf_profiling.reports.prof_dir import ProfData
from npu_tf_profiling.reports.report_paths import ReportPaths


@dataclass(frozen=True)
class ExportJob:
    """What every exporter reads: the PROF folder, its loaded step data (None: task data only), and the settings."""

    prof_dir: Path
    data: Optional[ProfData]
    timestamp: str
    slice_bytes: int  # largest step-trace timeline file (trace_slices)
    timeline_budget_bytes: int  # largest msprof timeline file (task.timeline)
    exports: frozenset[str]  # the export_type option: "text", "db"


@dataclass(frozen=True)
class Exporter:
    name: str
    export_type: Optional[str]  # "text" or "db": written only when chosen; None: always asked (decides inside)
    write: Callable[[ExportJob, ReportPaths], None]
    beside: bool = False  # written on a second thread while the others are: it waits mostly outside the GIL

    def wanted(self, job: ExportJob) -> bool:
        return self.export_type is None or self.export_type in job.exports


def exporters() -> tuple[Exporter, ...]:
    """Every output, in the order written (imported here, not at module load: each pulls in its writers)."""
    from npu_tf_profiling.reports.exporters import host, msprof_layout, step_trace, task_files, tensorboard

    return (step_trace.EXPORTER, task_files.EXPORTER, host.EXPORTER, msprof_layout.EXPORTER, tensorboard.EXPORTER)
