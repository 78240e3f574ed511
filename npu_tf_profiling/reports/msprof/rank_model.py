"""One rank's data, in the shape every msprof-layout file is written from.

Every file of a rank folder (CSV, JSON, both databases) is written from one
``RankModel``, so they cannot disagree with each other, and the step numbers
are those of our own cluster table: ``steps`` is ``cluster.step_table.rank_rows``
of the rank's step-trace table, row for row, plus the iteration window.

Times: ``*_us`` columns are the step trace's whole microseconds since the Unix
epoch (what our CSVs hold); task times are the StepStats nanoseconds.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import numpy as np
import pandas as pd

from npu_tf_profiling.raw_format.run_info import RunInfo
from npu_tf_profiling.reports.cluster import step_table as cst
from npu_tf_profiling.reports.step import table as st
from npu_tf_profiling.reports.task.classify import TASK_COMMUNICATION, TASK_TYPES
from npu_tf_profiling.reports.task.table import TaskTable

# Columns of RankModel.steps beyond cluster.step_table's: the iteration window and its trace points.
START_US = "start_us"
END_US = "end_us"
FP_US = "fp_us"
BP_US = "bp_us"
GETNEXT_START_US = "getnext_start_us"
GETNEXT_END_US = "getnext_end_us"

# Columns of RankModel.comm_ops (one row per all-reduce group of an iteration).
COMM_COLUMNS = ["step", "model_id", "group", "start_us", "end_us"]

# Columns of RankModel.tasks (one row per task_trace task).
TASK_COLUMNS = ["step", "model_id", "name", "op_type", "task_type", "stream_id", "start_ns", "end_ns", "wait_ns"]


@dataclass
class RankModel:
    """What one rank's msprof-layout files say.

    ``steps``: one row per iteration (``cluster.step_table.COLUMNS`` values as
    floats, NaN unknown, plus ``START_US``...``GETNEXT_END_US``), sorted by
    Model ID, Step. ``comm_ops``: ``COMM_COLUMNS``; ``group`` counts the
    iteration's all-reduce groups from 1. ``tasks``: ``TASK_COLUMNS`` when
    task_trace ran, else None.
    """

    rank: int
    prof_dir: Path
    info: RunInfo
    steps: pd.DataFrame
    comm_ops: pd.DataFrame
    tasks: Optional[pd.DataFrame]

    @property
    def host(self) -> str:
        return self.info.host or "localhost"

    @property
    def pid(self) -> int:
        return self.info.pid or 0

    @property
    def rank_size(self) -> Optional[int]:
        size = self.info.rank_size
        return size if size is not None and size > 0 else None

    @property
    def device_kind(self) -> str:
        return self.info.device_kind or "CPU"

    def time_range_ns(self) -> tuple[int, int]:
        """Start and end of what was recorded, ns (the session start when info.json has it)."""
        starts = [us_to_ns(v) for v in (self.steps[START_US].min(), self.comm_ops["start_us"].min()) if not np.isnan(v)]
        ends = [us_to_ns(v) for v in (self.steps[END_US].max(), self.comm_ops["end_us"].max()) if not np.isnan(v)]
        if self.tasks is not None and len(self.tasks):
            starts.append(int(self.tasks["start_ns"].min()))
            ends.append(int(self.tasks["end_ns"].max()))
        session = self.info.start_time_us
        if session is not None:
            starts.append(us_to_ns(session))
        start = min(starts, default=0)
        return start, max(ends, default=start)


def us_to_ns(us: float) -> int:
    """Whole µs since the epoch (what the step trace holds) to ns, exactly.

    ``us * 1000`` in float64 would round to 256 ns at today's epoch (beyond 2**53),
    so the multiplication is done on Python ints.
    """
    return int(round(us)) * 1000


def host_of(info: RunInfo) -> str:
    """The host a device folder was recorded on (info.json), ``localhost`` when unknown."""
    return info.host or "localhost"


def _float(series: pd.Series) -> np.ndarray:
    return series.astype("float64").to_numpy(dtype="float64", na_value=np.nan)


def device_table(table: st.StepTraceTable, device_id: int) -> st.StepTraceTable:
    """The rows of one device from a PROF folder's combined table."""
    keep = (table.frame[st.DEVICE_ID] == device_id).fillna(False).to_numpy(dtype=bool)
    if keep.all() and isinstance(table.frame.index, pd.RangeIndex):
        return table  # a PROF folder of one device (the usual case): no copy of the table
    return st.StepTraceTable(
        frame=table.frame[keep].reset_index(drop=True),
        n_reduce=table.n_reduce,
        has_previous=table.has_previous[keep].reset_index(drop=True),
    )


def _steps(table: st.StepTraceTable) -> pd.DataFrame:
    """``rank_rows`` plus the window and trace points, in ``rank_rows``' (stable) order."""
    rows = cst.rank_rows(table)
    frame = table.frame
    # rank_rows' order (a stable sort by Model ID, Iteration ID, Device_id; unknown last), taken column by
    # column: sorting the whole table would copy every column of it.
    keys = [_float(frame[c]) for c in (st.DEVICE_ID, st.ITERATION_ID_COL, st.MODEL_ID)]
    order = np.lexsort([np.where(np.isnan(k), np.inf, k) for k in keys])

    def column(name: str) -> np.ndarray:
        return _float(frame[name])[order]

    end = column(st.ITERATION_END)
    rows[START_US] = end - column(st.ITERATION_TIME)
    rows[END_US] = end
    rows[FP_US] = column(st.FP_START)
    rows[BP_US] = column(st.BP_END)
    rows[GETNEXT_START_US] = column(st.GETNEXT_START)
    rows[GETNEXT_END_US] = column(st.GETNEXT_END)
    return rows


def _comm_ops(table: st.StepTraceTable) -> pd.DataFrame:
    frame = table.frame
    if not table.n_reduce:
        return pd.DataFrame({c: pd.Series(dtype="float64" if c.endswith("_us") else "int64") for c in COMM_COLUMNS})
    start, duration = table.reduce_arrays()
    known = ~(np.isnan(start) | np.isnan(duration))  # (rows, groups)
    groups, rows = np.nonzero(known.T)  # group-major, as one frame per group concatenated would be
    ops = pd.DataFrame(
        {
            "step": frame[st.ITERATION_ID_COL].astype("int64").to_numpy()[rows],
            "model_id": frame[st.MODEL_ID].astype("int64").to_numpy()[rows],
            "group": groups + 1,
            "start_us": start[rows, groups],
            "end_us": (start + duration)[rows, groups],
        }
    )
    return ops.sort_values(["start_us", "model_id", "step", "group"], kind="mergesort").reset_index(drop=True)


def _tasks(table: TaskTable) -> pd.DataFrame:
    frame = table.frame
    names = np.array(table.names, dtype=object)
    op_types = np.array(table.op_types, dtype=object)
    task_types = np.array(TASK_TYPES, dtype=object)
    return pd.DataFrame(
        {
            "step": frame["iteration_id"].astype("int64").to_numpy(),
            "model_id": frame["model_id"].astype("int64").to_numpy(),
            "name": names[frame["name"].to_numpy()],
            "op_type": op_types[frame["op_type"].to_numpy()],
            "task_type": task_types[frame["task_type"].to_numpy()],
            "stream_id": frame["stream_id"].astype("int64").to_numpy(),
            "start_ns": frame["start_ns"].astype("int64").to_numpy(),
            "end_ns": frame["end_ns"].astype("int64").to_numpy(),
            "wait_ns": frame["wait_ns"].astype("int64").to_numpy(),
        }
    )


def build_rank_model(
    rank: int, prof_dir: Path, info: RunInfo, table: st.StepTraceTable, tasks: Optional[TaskTable]
) -> RankModel:
    """The model of one rank: its step-trace rows (one device's table) and its tasks, if any."""
    return RankModel(
        rank=rank,
        prof_dir=Path(prof_dir),
        info=info,
        steps=_steps(table),
        comm_ops=_comm_ops(table),
        tasks=_tasks(tasks) if tasks is not None else None,
    )


def is_communication_task(task_type: str) -> bool:
    return task_type == TASK_COMMUNICATION
