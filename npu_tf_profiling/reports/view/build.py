"""What ``npu-tf-prof view PATH`` draws, and where the page goes.

PATH is a PROF_* folder, an output folder holding PROF_* folders, or a cluster
(one PROF_* per rank, also spread over per-host sub-folders, as
``npu-tf-prof cluster`` finds them). The page has a cluster part when the
folders hold two ranks or more, then one part per PROF folder (the first
``MAX_DETAILED``; a note names the rest). Only raw data is read, through the
reports' own readers, and only the page is written: one file, replaced whole
(``raw_format.atomic``), by default ``view.html`` beside the reports:
``PROF_*/mindstudio_profiler_output/`` for one PROF folder,
``OUTPUT/npu_tf_prof_cluster/`` for several.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from npu_tf_profiling.raw_format import layout
from npu_tf_profiling.raw_format.atomic import atomic_write_text
from npu_tf_profiling.reports.cluster import timeline_focus as tfo
from npu_tf_profiling.reports.cluster.analysis import ClusterAnalysis, analyze_cluster
from npu_tf_profiling.reports.cluster.data import CLUSTER_OUTPUT_DIR, rank_folders, require_prof_dirs_below
from npu_tf_profiling.reports.errors import BadInputError, NothingFoundError
from npu_tf_profiling.reports.prof_dir import ProfData, load_prof_dir
from npu_tf_profiling.reports.task.files import device_task_table
from npu_tf_profiling.reports.task.table import TaskTable
from npu_tf_profiling.reports.view.cluster_section import add_cluster
from npu_tf_profiling.reports.view.model_section import add_prof_dir
from npu_tf_profiling.reports.view.page import Page, plotly_modules

VIEW_NAME = "view.html"
COMPARE_NAME = "view_compare.html"
MAX_DETAILED = 8  # PROF folders drawn in full; a 64-rank job's page stays small (each rank's own page has the rest)


@dataclass
class ViewInput:
    """What was found under PATH: the loaded PROF folders, the cluster analysis (two ranks or more), notes."""

    root: Path
    prof_dirs: list[Path]
    loaded: list[ProfData]  # with iteration records: every one, or (``find_input(..., drawn_only=True)``) the drawn ones
    cluster: Optional[ClusterAnalysis] = None
    notes: list[str] = field(default_factory=list)
    not_read: list[Path] = field(default_factory=list)  # PROF folders past what the page draws (``drawn_only``)

    @property
    def default_output(self) -> Path:
        if len(self.prof_dirs) == 1:
            return layout.report_dir(self.prof_dirs[0]) / VIEW_NAME
        return self.root / CLUSTER_OUTPUT_DIR / VIEW_NAME


def find_input(path: Path | str, drawn_only: bool = False) -> ViewInput:
    """Find and read what PATH holds; raises ``BadInputError`` (exit 2) / ``NothingFoundError`` (exit 3).

    ``drawn_only``: read only the PROF folders the page draws in full (``MAX_DETAILED``; past
    ``timeline_focus.ALL_RANKS_MAX`` ranks, those of the ranks the verdict names and a yardstick, as the
    cluster timeline draws); the cluster part reads every rank through the cluster analysis' tasks, which
    keep only compact columns (a 4,096-rank job read whole here was minutes and gigabytes).
    """
    root = Path(path)
    prof_dirs = require_prof_dirs_below(root)
    found = ViewInput(root=root, prof_dirs=prof_dirs, loaded=[])
    if len(list(rank_folders(root))) > 1:
        try:
            analysis = analyze_cluster(root, view_columns=True)
            found.cluster = analysis if len(analysis.ranks) > 1 else None
        except BadInputError as exc:  # two jobs' folders claiming one rank: each folder is still drawn
            found.notes.append(f"no cluster part: {exc}")
    to_read = prof_dirs
    if drawn_only and found.cluster is not None and len(found.cluster.ranks) > tfo.ALL_RANKS_MAX:
        focus = tfo.focus_ranks(found.cluster.report, found.cluster.rows)
        drawn = {Path(p.prof_dir) for p in found.cluster.ranks if p.rank in focus.reasons}
        to_read = [p for p in prof_dirs if p in drawn]
        found.not_read = [p for p in prof_dirs if p not in drawn]
        found.notes.append(f"PROF folders drawn in full: the ranks {focus.of_ranks(len(found.cluster.ranks))}")
    for index, prof_dir in enumerate(to_read):
        if drawn_only and len(found.loaded) == MAX_DETAILED:
            found.not_read = to_read[index:] + found.not_read
            break
        try:
            found.loaded.append(load_prof_dir(prof_dir))
        except NothingFoundError as exc:
            found.notes.append(f"left out: {exc}")
    if not found.loaded:
        raise NothingFoundError(f"{root}: no step trace to draw (no iteration records in {len(prof_dirs)} "
                                f"{layout.PROF_DIR_PREFIX}* folder(s): {'; '.join(found.notes)})")
    return found


def build_page(found: ViewInput, compare: Optional[str] = None) -> Page:
    """The page of ``found``, first compared with the run at ``compare`` when given (raises ``MissingDependencyError``
    without plotly)."""
    plotly_modules()  # fail before reading tasks, with the install line
    page = Page(title=f"npu-tf-prof view: {found.root.resolve().name or found.root}")
    page.paragraph(f"{found.root.resolve()} · {time.strftime('%Y-%m-%d %H:%M:%S')} · all times in µs, "
                   "as in step_trace_*.csv (docs/output_format.md)")
    for note in found.notes:
        page.paragraph(note, "note")
    if compare is not None:
        from npu_tf_profiling.reports.view.compare_section import add_compare  # it reads runs through diff, which reads through here

        add_compare(page, found, compare)
    if found.cluster is not None:
        add_cluster(page, found.cluster)
    detailed = found.loaded[:MAX_DETAILED]
    rest = [d.prof_dir for d in found.loaded[MAX_DETAILED:]] + found.not_read
    if rest:
        names = ", ".join(p.name for p in rest[:MAX_DETAILED]) + (f" and {len(rest) - MAX_DETAILED} more" if len(rest) > MAX_DETAILED else "")
        page.paragraph(f"{len(detailed) + len(rest)} PROF folders: {len(detailed)} are drawn below; run "
                       f"npu-tf-prof view on any of the others for its page ({names})", "note")
    for data in detailed:
        add_prof_dir(page, data, task_tables(data))
    return page


def task_tables(data: ProfData) -> dict[int, TaskTable]:
    """Device id -> its task table, for the devices of ``data`` that were task-traced."""
    tables = {}
    for device in data.devices:
        table = device_task_table(device, data.table)
        if table is not None and len(table):
            tables[device.device_id] = table
    return tables


def write_view(path: Path | str, output: Path | str | None = None, compare: Optional[str] = None) -> Path:
    """Build the page of ``path`` (compared with ``compare``) and write it (default: ``ViewInput.default_output``,
    named ``COMPARE_NAME`` for a comparison, so the run's own page stays); returns where."""
    found = find_input(path, drawn_only=compare is None)  # a comparison reads every rank of both sides
    page = build_page(found, compare)
    target = Path(output) if output is not None else found.default_output
    if output is None and compare is not None:
        target = target.with_name(COMPARE_NAME)
    atomic_write_text(target, page.to_html())
    return target
