"""The merged cluster timeline as files that open: one file while it is small, else one per host and group of ranks.

Chrome tracing gives up on JSON of a few hundred MB and Perfetto's UI at about
2 GB, and 1,024 ranks x 1,000 steps of step trace alone is over 1 GB. So:

* up to ``MAX_ROWS_PER_FILE`` iteration rows in all: ``cluster_timeline.json``,
  every rank as before;
* above: ``cluster_timeline/<host>_ranks_<first>-<last>.json``, the ranks of one
  host in groups of at most ``MAX_ROWS_PER_FILE`` rows (a few hundred MB at
  most of step trace), each a whole trace on the same shifted clock, so a
  host's part opens on its own and files of several hosts can be loaded together.

Each file is written by one Dask task (``engine``) that reads its ranks'
raw data again: the per-rank results that reach the cross-rank step are only
compact columns, and reading a rank's frames again costs less than shipping
its events.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from npu_tf_profiling.raw_format.atomic import atomic_write_text
from npu_tf_profiling.reports.cluster import timeline as ctl
from npu_tf_profiling.reports.cluster.data import load_ranks

FOLDER_NAME = "cluster_timeline"
# ~1.3 KB of JSON per iteration row of step trace (4 all-reduce groups): 150,000 rows are about 200 MB, CANN's slice size.
MAX_ROWS_PER_FILE = 150_000
UNKNOWN_HOST = "unknown-host"


@dataclass(frozen=True)
class TimelineGroup:
    """One timeline file: its ranks' folders and where it goes."""

    path: str
    folders: tuple[tuple[str, str], ...]  # (prof_dir, device_dir) per rank


@dataclass(frozen=True)
class RankRef:
    rank: int
    host: Optional[str]
    rows: int
    prof_dir: str
    device_dir: str


def plan_files(out: Path, ranks: list[RankRef], max_rows: Optional[int] = None) -> list[TimelineGroup]:
    """The timeline files for ``ranks`` (with records), in rank order within each host (see the module docstring)."""
    max_rows = max_rows or MAX_ROWS_PER_FILE
    ordered = sorted(ranks, key=lambda r: r.rank)
    if sum(r.rows for r in ordered) <= max_rows:
        return [TimelineGroup(str(out / ctl.JSON_NAME), tuple((r.prof_dir, r.device_dir) for r in ordered))]
    by_host: dict[str, list[RankRef]] = {}
    for ref in ordered:
        by_host.setdefault(ref.host or UNKNOWN_HOST, []).append(ref)
    groups: list[TimelineGroup] = []
    for host, refs in sorted(by_host.items()):
        chunk: list[RankRef] = []
        for ref in refs + [None]:  # None closes the last chunk
            if chunk and (ref is None or sum(r.rows for r in chunk) + ref.rows > max_rows):
                name = f"{_safe(host)}_ranks_{chunk[0].rank}-{chunk[-1].rank}.json"
                groups.append(TimelineGroup(str(out / FOLDER_NAME / name), tuple((r.prof_dir, r.device_dir) for r in chunk)))
                chunk = []
            if ref is not None:
                chunk.append(ref)
    return groups


def _safe(host: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", host) or UNKNOWN_HOST


def write_group(group: TimelineGroup, root: str, alignment: ctl.ClockAlignment, with_tasks: bool) -> tuple[str, int, list[str]]:
    """The task: read the group's ranks, write its timeline file; (path, event count, notes on what was left out)."""
    data = load_ranks(root, [(Path(p), Path(d)) for p, d in group.folders])
    shifts = {r: alignment.shifts_us.get(r, 0.0) for r in data.rank_ids}
    text, count, notes = ctl.cluster_timeline_json(data, ctl.ClockAlignment(alignment.mode, shifts, alignment.reason), with_tasks)
    atomic_write_text(Path(group.path), text)
    return group.path, count, notes
