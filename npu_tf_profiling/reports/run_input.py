"""A run as the charts page and ``diff`` read it: every PROF_* folder at or below a path, and the cluster analysis.

PATH is a PROF_* folder, an output folder holding PROF_* folders, or a cluster
(one PROF_* per rank, also spread over per-host sub-folders, as
``npu-tf-prof cluster`` finds them). ``view`` draws what is read here and
``diff`` compares two of them, so both see a run the same way; only raw data is
read, through the reports' own readers.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

from npu_tf_profiling.raw_format import layout
from npu_tf_profiling.reports.cluster import timeline_focus as tfo
from npu_tf_profiling.reports.cluster.analysis import ClusterAnalysis, analyze_cluster
from npu_tf_profiling.reports.cluster.data import rank_folders, require_prof_dirs_below
from npu_tf_profiling.reports.errors import BadInputError, NothingFoundError
from npu_tf_profiling.reports.prof_dir import ProfData, load_prof_dir
from npu_tf_profiling.reports.task.files import device_task_table
from npu_tf_profiling.reports.task.table import TaskTable

MAX_DETAILED = 8  # PROF folders drawn in full; a 64-rank job's page stays small (each rank's own page has the rest)


@dataclass
class RunInput:
    """What was found under PATH: the loaded PROF folders, the cluster analysis (two ranks or more), notes."""

    root: Path
    prof_dirs: list[Path]
    loaded: list[ProfData]  # with iteration records: every one, or (``find_input(..., drawn_only=True)``) the drawn ones
    cluster: Optional[ClusterAnalysis] = None
    notes: list[str] = field(default_factory=list)
    not_read: list[Path] = field(default_factory=list)  # PROF folders past what the page draws (``drawn_only``)


def find_input(path: Path | str, drawn_only: bool = False) -> RunInput:
    """Find and read what PATH holds; raises ``BadInputError`` (exit 2) / ``NothingFoundError`` (exit 3).

    ``drawn_only``: read only the PROF folders the charts page draws in full (``MAX_DETAILED``; past
    ``timeline_focus.ALL_RANKS_MAX`` ranks, those of the ranks the verdict names and a yardstick, as the
    cluster timeline draws); the cluster part reads every rank through the cluster analysis' tasks, which
    keep only compact columns (a 4,096-rank job read whole here was minutes and gigabytes).
    """
    root = Path(path)
    prof_dirs = require_prof_dirs_below(root)
    found = RunInput(root=root, prof_dirs=prof_dirs, loaded=[])
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


def task_tables(data: ProfData) -> dict[int, TaskTable]:
    """Device id -> its task table, for the devices of ``data`` that were task-traced."""
    tables = {}
    for device in data.devices:
        table = device_task_table(device, data.table)
        if table is not None and len(table):
            tables[device.device_id] = table
    return tables
