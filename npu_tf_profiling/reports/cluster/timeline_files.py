"""The merged cluster timeline as files that open: one file while it is small, else one per host and group of ranks.

Chrome tracing gives up on JSON of a few hundred MB and Perfetto's UI at about
2 GB, and 1,024 ranks x 1,000 steps of step trace alone is over 1 GB. So:

* up to ``MAX_ROWS_PER_FILE`` iteration rows in all: ``cluster_timeline.json``,
  every rank as before;
* above: ``cluster_timeline/<host>_ranks_<first>-<last>.json``, the ranks of one
  host in groups of at most ``MAX_ROWS_PER_FILE`` rows (a few hundred MB at
  most of step trace), each a whole trace on the same shifted clock, so a
  host's part opens on its own and files of several hosts can be loaded together.

A file holds its ranks one after the other (each rank's metadata, spans,
clock label, tasks). The per-rank task (``rank_task``) writes each rank's
events, unshifted, as a fragment file when no clock shift is expected (one
host, or ``--align none``); one Dask task per timeline file then joins its
ranks' fragments, or reads a rank's raw data again when its clock is shifted.
Events never travel to the cross-rank step, which holds compact columns only.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from npu_tf_profiling.raw_format.atomic import AtomicFile, atomic_write_text
from npu_tf_profiling.reports.cluster import timeline as ctl
from npu_tf_profiling.reports.cluster.data import ClusterData, RankData, load_ranks
from npu_tf_profiling.reports.step import table as st

FOLDER_NAME = "cluster_timeline"
FRAGMENTS_DIR = ".cluster_timeline_fragments"  # inside the output folder, removed when the files are written
# ~1.3 KB of JSON per iteration row of step trace (4 all-reduce groups): 150,000 rows are about 200 MB, CANN's slice size.
MAX_ROWS_PER_FILE = 150_000
UNKNOWN_HOST = "unknown-host"


@dataclass(frozen=True)
class TimelineGroup:
    """One timeline file: its ranks' folders and where it goes."""

    path: str
    ranks: tuple[int, ...]
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
        return [_group(out / ctl.JSON_NAME, ordered)]
    by_host: dict[str, list[RankRef]] = {}
    for ref in ordered:
        by_host.setdefault(ref.host or UNKNOWN_HOST, []).append(ref)
    groups: list[TimelineGroup] = []
    for host, refs in sorted(by_host.items()):
        chunk: list[RankRef] = []
        for ref in refs + [None]:  # None closes the last chunk
            if chunk and (ref is None or sum(r.rows for r in chunk) + ref.rows > max_rows):
                name = f"{_safe(host)}_ranks_{chunk[0].rank}-{chunk[-1].rank}.json"
                groups.append(_group(out / FOLDER_NAME / name, chunk))
                chunk = []
            if ref is not None:
                chunk.append(ref)
    return groups


def _group(path: Path, refs: list[RankRef]) -> TimelineGroup:
    return TimelineGroup(str(path), tuple(r.rank for r in refs), tuple((r.prof_dir, r.device_dir) for r in refs))


def _safe(host: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", host) or UNKNOWN_HOST


def fragment_path(fragments: str, rank: int) -> Path:
    return Path(fragments) / f"rank_{rank}.json-part"


def write_fragment(fragments: str, rank: RankData, table: st.StepTraceTable, with_tasks: bool) -> list[str]:
    """One rank's unshifted events, comma-joined, into its fragment file; notes on what was left out."""
    data = ClusterData(root=rank.prof_dir, ranks=[rank], empty_ranks=[], table=table)
    events, notes = ctl.cluster_timeline_events(data, ctl.ClockAlignment("none", {rank.rank: 0.0}), with_tasks)
    atomic_write_text(fragment_path(fragments, rank.rank), ",".join(events))
    return notes


def write_group(group: TimelineGroup, root: str, alignment: ctl.ClockAlignment, with_tasks: bool,
                fragments: Optional[str]) -> tuple[str, list[str]]:
    """The task: one timeline file from its ranks' fragments, or their raw data when shifted; (path, notes)."""
    notes: list[str] = []
    with AtomicFile(Path(group.path)) as out:
        out.handle.write("[")
        first = True
        for rank, folder in zip(group.ranks, group.folders):
            shift = alignment.shifts_us.get(rank, 0.0)
            fragment = fragment_path(fragments, rank) if fragments else None
            if fragment is not None and not shift and fragment.is_file():
                text = fragment.read_text(encoding="utf-8")
            else:
                data = load_ranks(root, [(Path(folder[0]), Path(folder[1]))])
                events, rank_notes = ctl.cluster_timeline_events(data, ctl.ClockAlignment(alignment.mode, {rank: shift}, alignment.reason), with_tasks)
                text = ",".join(events)
                notes.extend(rank_notes)
            if text:
                out.handle.write(text if first else "," + text)
                first = False
        out.handle.write("]\n")
    return group.path, notes
