"""The per-rank work of the cluster analysis, one Dask task per batch of ranks: raw data in, compact columns out.

A task reads a rank's raw records, computes its step-trace table with the
single-device formulas (so a cluster row always equals the rank's own CSV row),
formats its ``cluster_step_trace_time.csv`` lines, and says whether its
msprof-analyze folder is missing or older than the raw data (``rank_layouts``
fills those in: a worker that was killed never wrote its reports). What comes back is small and
fixed per (step, rank): the few columns the cross-rank questions need, the
rank's CSV lines as bytes, and its clock-sync points. The raw rows and the
step table never leave the task, so no process ever holds every rank's raw
rows (``docs/scale.md``).

Tasks take and return plain data (paths as strings, numpy/pandas columns),
so they run the same on Dask's in-process scheduler and on a remote Dask
worker, which reads the rank folders at the same path (shared storage).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import numpy as np
import pandas as pd

from npu_tf_profiling.raw_format import layout
from npu_tf_profiling.raw_format.run_info import RunInfo
from npu_tf_profiling.reports.cluster import step_table as cst
from npu_tf_profiling.reports.cluster.data import sync_points
from npu_tf_profiling.reports.step import records as raw_mod
from npu_tf_profiling.reports.step import retraces
from npu_tf_profiling.reports.step import table as st
from npu_tf_profiling.reports.task import traced as task_traced

# The per-(step, rank) columns the cross-rank work reads (slow-rank tests, communication shares, the view's heatmaps).
ANALYSIS_COLUMNS = [cst.DATA_AUG_BOUND, cst.FP_TO_BP, cst.REDUCE, cst.ITERATION_TIME, cst.PREPARING,
                    cst.COMM_NOT_OVERLAPPED, cst.OVERLAPPED]
SYNC_REDUCE = "sync_reduce"  # the step's last all-reduce end (µs, the rank's clock)
SYNC_END = "sync_end"  # its Iteration End
# With ``TaskOptions.view_columns``: what the charts page's per-rank phase medians also need (``view.cluster_section``).
GETNEXT_TIME = "getnext_time"
REFRESH = "refresh"
HAS_PREVIOUS = "has_previous"  # the previous iteration is known: a steady iteration (``step.summary.basis_rows``)


@dataclass
class RankPart:
    """What one rank's task returns (see the module docstring)."""

    rank: int
    prof_dir: str
    device_dir: str
    info: RunInfo
    has_trace: bool  # a training_trace file exists
    skipped_lines: int = 0
    run_counter_models: list[int] = field(default_factory=list)  # models whose Iteration IDs are run counters
    rows: Optional[pd.DataFrame] = None  # Model ID, Step, Index + ANALYSIS_COLUMNS + the two sync columns, by (model, step)
    count: int = 0  # its iteration rows (``rows`` is handed on to the cross-rank table)
    csv: bytes = b""  # its cluster_step_trace_time.csv lines, in ``rows``' order
    csv_keys: np.ndarray = field(default_factory=lambda: np.zeros((0, 2), "int64"))  # (model, step) of each line
    n_reduce: int = 0
    traced_steps: frozenset[tuple[int, int]] = frozenset()  # (model, step) task_trace disturbed on this rank
    retraced_steps: frozenset[tuple[int, int]] = frozenset()  # (model, step) whose call retraced its step here
    layout_stale: bool = False  # its msprof-analyze folder is missing or older than its raw data (``rank_layouts``)
    timeline_notes: list[str] = field(default_factory=list)  # what its timeline fragment left out

    @property
    def host(self) -> Optional[str]:
        return self.info.host


@dataclass(frozen=True)
class TaskOptions:
    check_layouts: bool = False  # whether its msprof-analyze folder is missing or stale (``RankPart.layout_stale``)
    fragments: Optional[str] = None  # write each rank's timeline fragment into this folder (``timeline_files``)
    with_tasks: bool = True  # task_trace tasks in the timeline
    view_columns: bool = False  # the rows also carry GETNEXT_TIME, REFRESH and HAS_PREVIOUS


def rank_batch(device_dirs: list[tuple[str, str]], options: TaskOptions) -> list[RankPart]:
    """The task: ``rank_part`` of each (prof_dir, device_dir) of a batch (batches keep the task count low)."""
    return [rank_part(prof_dir, device_dir, options) for prof_dir, device_dir in device_dirs]


def rank_part(prof_dir: str, device_dir: str, options: TaskOptions = TaskOptions()) -> RankPart:
    device = raw_mod.read_device(device_dir)
    part = RankPart(rank=device.device_id, prof_dir=prof_dir, device_dir=device_dir, info=device.info,
                    has_trace=device.trace is not None)
    if device.trace is None:
        return part
    part.skipped_lines = device.trace.skipped_count
    frame = device.trace.frame
    if frame.empty:
        return part
    part.run_counter_models = sorted(m for m, source in device.trace.id_source.items() if source == raw_mod.ID_FROM_RUN)
    part.n_reduce = st.max_reduce_groups(frame)
    table = st.compute_step_trace(frame, device.device_id, part.n_reduce)
    rows = cst.rank_rows(table)
    part.csv = cst.csv_lines(cst.as_csv_rows(rows)).encode()
    part.csv_keys = rows[[cst.MODEL_ID, cst.STEP]].to_numpy(dtype="int64")
    sync = sync_points(table)  # in the table's order; rank_rows sorts by (model, step)
    order = np.lexsort((table.frame[st.ITERATION_ID_COL].to_numpy(dtype="int64"), table.frame[st.MODEL_ID].to_numpy(dtype="int64")))
    compact = rows[[cst.MODEL_ID, cst.STEP, cst.INDEX] + ANALYSIS_COLUMNS].copy()
    compact[SYNC_REDUCE] = sync[0][order]
    compact[SYNC_END] = sync[1][order]
    if options.view_columns:
        compact[GETNEXT_TIME] = st.float_values(table.frame[st.GETNEXT_TIME])[order]
        compact[REFRESH] = st.float_values(table.frame[st.ITERATION_REFRESH])[order]
        compact[HAS_PREVIOUS] = table.has_previous.to_numpy(dtype=bool)[order]
    part.rows = compact
    part.count = len(compact)
    _, disturbed = task_traced.disturbed(frame, task_traced.traced_runs(Path(device_dir)))
    part.traced_steps = _steps(frame, disturbed)
    part.retraced_steps = _steps(frame, retraces.retraced_rows(frame, Path(device_dir), device.info) != "")
    if options.fragments:
        from npu_tf_profiling.reports.cluster.data import RankData
        from npu_tf_profiling.reports.cluster.timeline_files import write_fragment

        rank = RankData(device.device_id, Path(prof_dir), Path(device_dir), device.info, device.trace)
        part.timeline_notes = write_fragment(options.fragments, rank, table, options.with_tasks)
    if options.check_layouts:
        from npu_tf_profiling.reports.msprof.writer import is_stale

        try:
            part.layout_stale = is_stale(Path(prof_dir), part.rank, device.device_dir, device.info)
        except OSError:  # never fails the analysis: writing the folder then says what is wrong (``rank_layouts``)
            part.layout_stale = True
    return part


def _steps(frame: pd.DataFrame, mask: np.ndarray) -> frozenset[tuple[int, int]]:
    """The (model, step) pairs of the raw frame's masked rows."""
    if not mask.any():
        return frozenset()
    hit = frame[mask]
    return frozenset(zip(hit[layout.K_MODEL_ID].astype(int).tolist(), hit[raw_mod.ITERATION_ID].astype(int).tolist()))
