"""Find every rank of a multi-worker run and read its step trace (the cluster analysis' input).

Every worker profiles into the shared output folder on its own:
``OUTPUT_DIR/PROF_<pid>_<time>_<id>/device_<rank>/``. The rank is the device id
the runtime chose (``DEVICE_ID``, ``RANK_ID``, or the ``TF_CONFIG`` task: chief
first, then workers). A cluster is every ``device_*`` folder found under
OUTPUT_DIR: in its ``PROF_*`` folders, or in sub-folders of it up to
``MAX_DEPTH`` levels down (one folder per host, copied together), never in
an analysis output (ours, ``npu_tf_prof_cluster``, or msprof-analyze's,
``cluster_analysis_output``) nor in the msprof-analyze rank folders
(``*_ascend_pt``, written from the same raw data).

Each rank's records go through the same reader and step-trace formulas as the
single-device reports (``raw``, ``step_trace``), so a cluster row and the rank's
own ``step_trace_*.csv`` row always agree. All ranks share one table
(``Device_id`` = rank) with the Reduce pairs padded to the widest rank.

Nothing is dropped silently: torn lines are counted (``raw``), a rank folder
without records is kept in ``empty_ranks``, a rank whose Iteration IDs are
run counters (not the global step, so they may not line up with the others)
gets a note, and two folders claiming one rank are an error.
"""
from __future__ import annotations

import os
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional, Sequence

import numpy as np
import pandas as pd

from npu_tf_profiling.raw_format import layout
from npu_tf_profiling.raw_format.run_info import RunInfo
from npu_tf_profiling.reports.step import records as raw_mod
from npu_tf_profiling.reports.step import table as st
from npu_tf_profiling.reports.errors import BadInputError, NothingFoundError, RawDataWarning
from npu_tf_profiling.reports.msprof import names as msprof_names
from npu_tf_profiling.reports.prof_dir import is_prof_dir

# Our analysis output. Not msprof-analyze's ``cluster_analysis_output``: msprof-analyze writes there
# by default (inside its input folder, which is ours too) and may delete it first.
CLUSTER_OUTPUT_DIR = "npu_tf_prof_cluster"
MSPROF_OUTPUT_DIR = "cluster_analysis_output"
_NOT_RANKS = (CLUSTER_OUTPUT_DIR, MSPROF_OUTPUT_DIR)
MAX_DEPTH = 3


@dataclass
class RankData:
    """One rank: where its data is and what was read."""

    rank: int
    prof_dir: Path
    device_dir: Path
    info: RunInfo
    trace: Optional[raw_mod.TraceRead]

    @property
    def host(self) -> Optional[str]:
        return self.info.host

    @property
    def pid(self) -> Optional[int]:
        return self.info.pid

    @property
    def rows(self) -> int:
        return 0 if self.trace is None else len(self.trace.frame)


class RankSet:
    """Rank numbers and hosts of ``ranks`` (with records) and ``empty_ranks``: a loaded cluster and an analysis share them."""

    ranks: Sequence[Any]  # each with .rank and .host
    empty_ranks: Sequence[Any]

    @property
    def rank_ids(self) -> list[int]:
        return [r.rank for r in self.ranks]

    @property
    def all_rank_ids(self) -> list[int]:
        return sorted(self.rank_ids + [r.rank for r in self.empty_ranks])

    @property
    def hosts(self) -> list[str]:
        return sorted({r.host for r in self.ranks if r.host})


@dataclass
class ClusterData(RankSet):
    """Every rank found under ``root``; ``table`` holds the ranks that have records."""

    root: Path
    ranks: list[RankData]  # with iteration records, by rank
    empty_ranks: list[RankData]  # device folders without any record (killed early, trace off...)
    table: st.StepTraceTable
    notes: list[str] = field(default_factory=list)

    @property
    def skipped_lines(self) -> int:
        return sum(r.trace.skipped_count for r in [*self.ranks, *self.empty_ranks] if r.trace is not None)


def find_prof_dirs_below(root: Path | str) -> list[Path]:
    """Every PROF folder at or below ``root`` (up to ``MAX_DEPTH`` levels, so per-host sub-folders count), sorted by path.

    Unlike ``prof_dir.find_prof_dirs`` (one level: what `report` and `summary` take),
    a cluster may be spread over sub-folders, one per host.

    Raises ``BadInputError`` for a missing path, a file, or a device folder.
    """
    root = Path(root)
    if not root.exists():
        raise BadInputError(f"{root}: no such folder")
    if not root.is_dir():
        raise BadInputError(f"{root}: not a folder")
    if root.name.startswith(layout.DEVICE_DIR_PREFIX) and not layout.device_dirs(root):
        raise BadInputError(f"{root}: a device folder; give the folder holding the PROF_* folders ({root.parent.parent})")
    if is_prof_dir(root):
        return [root]
    found: list[Path] = []
    base_depth = len(root.parts)
    for current, dirs, _files in os.walk(root):
        here = Path(current)
        dirs[:] = sorted(
            d for d in dirs
            if d not in _NOT_RANKS and not d.startswith(layout.DEVICE_DIR_PREFIX) and not msprof_names.is_rank_folder(Path(d))
        )
        if here != root and is_prof_dir(here):
            found.append(here)
            dirs[:] = []
        elif len(here.parts) - base_depth >= MAX_DEPTH:
            dirs[:] = []
    return sorted(found)


def require_prof_dirs_below(root: Path | str) -> list[Path]:
    """``find_prof_dirs_below``, raising ``NothingFoundError`` (exit 3) when ``root`` holds no PROF folder.

    For the commands that take a run or a whole job (``view``, ``tensorboard``).
    """
    found = find_prof_dirs_below(root)
    if not found:
        raise NothingFoundError(f"{root}: not a {layout.PROF_DIR_PREFIX}* folder, and holds none (expected "
                                f"{layout.PROF_DIR_PREFIX}<pid>_<time>_<id>/{layout.DEVICE_DIR_PREFIX}<id>/ with a step trace)")
    return found


def rank_folders(root: Path | str) -> list[tuple[Path, Path]]:
    """(PROF folder, device folder) of every rank folder under ``root``, unread.

    Raises ``BadInputError`` for a bad path, ``NothingFoundError`` when ``root`` holds no PROF folder.
    """
    root = Path(root)
    prof_dirs = find_prof_dirs_below(root)
    if not prof_dirs:
        raise NothingFoundError(
            f"{root}: no {layout.PROF_DIR_PREFIX}* folders (expected {layout.PROF_DIR_PREFIX}<pid>_<time>_<id>/"
            f"{layout.DEVICE_DIR_PREFIX}<rank>/ from each worker)"
        )
    return [(prof_dir, device_dir) for prof_dir in prof_dirs for device_dir in layout.device_dirs(prof_dir)]


def check_one_folder_per_rank(root: Path | str, claims: dict[int, list[Path]]) -> None:
    """``BadInputError`` when several device folders claim one rank (``claims``: rank -> its folders)."""
    clashes = {rank: dirs for rank, dirs in claims.items() if len(dirs) > 1}
    if clashes:
        shown = "; ".join(f"rank {rank}: " + ", ".join(str(d) for d in dirs) for rank, dirs in sorted(clashes.items()))
        raise BadInputError(
            f"{root}: several folders claim the same rank ({shown}). Give a folder holding one run "
            "(move older runs' PROF_* folders elsewhere), or set DEVICE_ID/RANK_ID per worker"
        )


@dataclass(frozen=True)
class RankFound:
    """What the notes on a cluster's ranks need to know of each rank (read by ``load_cluster`` or a Dask task)."""

    rank: int
    device_dir: Path
    info: RunInfo
    has_trace: bool
    has_rows: bool
    run_counter_models: tuple[int, ...] = ()


def rank_notes(root: Path | str, found: list[RankFound]) -> list[str]:
    """Notes on ranks without records (also warned), absent ranks and run-counter Iteration IDs.

    Raises ``NothingFoundError`` when no rank has an iteration record.
    """
    found = sorted(found, key=lambda f: f.rank)
    with_rows = [f for f in found if f.has_rows]
    notes: list[str] = []
    for item in found:
        if item.has_rows:
            continue
        reason = "no readable iteration record" if item.has_trace else "no training_trace file"
        notes.append(f"rank {item.rank} ({item.device_dir}): {reason}; all its steps count as missing")
        warnings.warn(f"{item.device_dir}: rank {item.rank} has {reason}", RawDataWarning, stacklevel=3)
    if not with_rows:
        raise NothingFoundError(f"{root}: no iteration records in any rank ({len(found)} rank folder(s) found)")
    notes.extend(_absent_ranks([f.rank for f in found], [f.info for f in found]))
    if len(with_rows) > 1:
        for item in with_rows:
            if item.run_counter_models:
                notes.append(
                    f"rank {item.rank}: Iteration IDs of model(s) {', '.join(map(str, item.run_counter_models))} are run counters, "
                    "not the global step, so they may not line up with the other ranks"
                )
    return notes


def load_cluster(root: Path | str) -> ClusterData:
    """Read every rank under ``root`` into one process and build the cluster's step-trace table.

    For what needs every rank's rows together (the view's per-phase medians, a
    timeline file's ranks); ``npu-tf-prof cluster`` itself reads ranks in Dask
    tasks (``analysis``). Raises ``BadInputError`` (exit 2) for a bad path,
    unreadable data or two folders claiming one rank; ``NothingFoundError``
    (exit 3) when no PROF folder or no iteration record exists.
    """
    return load_ranks(root, rank_folders(root))


def load_ranks(root: Path | str, folders: list[tuple[Path, Path]]) -> ClusterData:
    """``load_cluster`` of the given (PROF folder, device folder) pairs only."""
    root = Path(root)
    by_rank: dict[int, RankData] = {}
    claims: dict[int, list[Path]] = {}
    for prof_dir, device_dir in folders:
        try:
            device = raw_mod.read_device(device_dir)
        except OSError as exc:
            raise BadInputError(f"{device_dir}: cannot read raw data: {exc}") from exc
        claims.setdefault(device.device_id, []).append(device_dir)
        by_rank[device.device_id] = RankData(device.device_id, Path(prof_dir), Path(device_dir), device.info, device.trace)
    check_one_folder_per_rank(root, claims)
    found = [RankFound(d.rank, d.device_dir, d.info, d.trace is not None, bool(d.rows),
                       tuple(sorted(m for m, source in d.trace.id_source.items() if source == raw_mod.ID_FROM_RUN)) if d.rows else ())
             for d in by_rank.values()]
    notes = rank_notes(root, found)
    ranks = [by_rank[r] for r in sorted(by_rank) if by_rank[r].rows]
    empty = [by_rank[r] for r in sorted(by_rank) if not by_rank[r].rows]
    return ClusterData(root=root, ranks=ranks, empty_ranks=empty, table=cluster_table(ranks), notes=notes)


def _absent_ranks(found: list[int], infos: list[RunInfo]) -> list[str]:
    """Notes for ranks with no folder: all of 0..rank_size-1 when info.json records the job's size, else gaps."""
    found = sorted(found)
    sizes = [info.rank_size for info in infos]
    size = max((v for v in sizes if v is not None and v > 0), default=None)
    if size is not None:
        absent = sorted(set(range(size)) - set(found))
        where = f"of the {size} rank(s) the job has (rank_size in info.json)"
    else:
        absent = sorted(set(range(found[0], found[-1] + 1)) - set(found))
        where = "between the ranks found"
    if not absent:
        return []
    return [f"no folder for rank(s) {', '.join(map(str, absent))} {where} (a worker that never started profiling?)"]


def cluster_table(ranks: list[RankData]) -> st.StepTraceTable:
    """The step-trace table of all ranks, computed in one pass (not one pandas pass per rank).

    ``compute_step_trace`` keeps iterations of different Model IDs apart; giving
    it (rank, model) pairs as model ids keeps ranks apart too, with the same
    formulas as each rank's own CSV. Rows come out by rank, then model, then
    Iteration End, as ``concat_tables`` of per-rank tables would give.
    """
    n_reduce = max(st.max_reduce_groups(d.trace.frame) for d in ranks)
    frames = []
    for d in ranks:
        frame = d.trace.frame
        if int(frame[layout.K_MODEL_ID].max()) >= _MODEL_KEY or int(frame[layout.K_MODEL_ID].min()) < 0:
            tables = [st.compute_step_trace(r.trace.frame, r.rank, n_reduce) for r in ranks]  # odd ids: the slow way
            return st.concat_tables(tables)
        frames.append(frame.assign(**{layout.K_MODEL_ID: frame[layout.K_MODEL_ID] + d.rank * _MODEL_KEY}))
    combined = pd.concat(frames, ignore_index=True)
    table = st.compute_step_trace(combined, 0, n_reduce)
    key = table.frame[st.MODEL_ID].astype("int64")
    table.frame[st.DEVICE_ID] = (key // _MODEL_KEY).astype("Int64")
    table.frame[st.MODEL_ID] = (key % _MODEL_KEY).astype("Int64")
    return table


_MODEL_KEY = 1_000_000  # (rank, model) -> rank * _MODEL_KEY + model


def sync_points(table: st.StepTraceTable) -> tuple[np.ndarray, np.ndarray]:
    """Per row: the last all-reduce end (NaN without one) and Iteration End: the moments all ranks share."""
    end = st.float_values(table.frame[st.ITERATION_END])
    if not table.n_reduce:
        return np.full(len(end), np.nan), end
    rs, rd = table.reduce_arrays()
    ends = rs + rd
    with np.errstate(invalid="ignore"):
        last = np.where(np.isnan(ends).all(axis=1), np.nan, np.nanmax(np.where(np.isnan(ends), -np.inf, ends), axis=1))
    return last, end
