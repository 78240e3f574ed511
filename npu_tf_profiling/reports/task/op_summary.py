"""``task_time``, ``op_summary`` and ``op_statistic`` tables from a ``TaskTable``.

Numbers: times are microseconds with 3 decimals, computed from the integer
nanoseconds of the step stats, so they are exact (Task Start is µs since the
Unix epoch, the clock of the step trace). Durations are all_start →
all_start + all_end_rel of each node (the span TensorFlow's timeline draws).

``op_summary`` (per Op Name) and ``op_statistic`` (per Op Type) both have, per
(Device_id, Model ID): Count, Total/Avg/Min/Max Time(us) and Ratio(%).

Ratio(%) = Total Time / the summed Iteration Time of that model's *traced*
iterations (those with a task_trace record) × 100. Iteration Time is the step
trace's (`docs/output_format.md`); for an iteration without a training_trace record it is
the task record's run_end − run_start. Ops of one iteration run in parallel
on several threads, so the ratios of a model can add up to more than 100%.
When no iteration time is known the Ratio is ``N/A``.
"""
from __future__ import annotations

import csv
import io
from typing import Iterable, Iterator, Sequence

import numpy as np
import pandas as pd

from npu_tf_profiling.reports.task.classify import TASK_TYPES
from npu_tf_profiling.reports.task.table import TaskTable

NA = "N/A"

DEVICE_ID = "Device_id"
MODEL_ID = "Model ID"
ITERATION_ID = "Iteration ID"
OP_NAME = "Op Name"
OP_TYPE = "Op Type"
TASK_TYPE = "Task Type"
STREAM_ID = "Stream ID"
TASK_START = "Task Start(us)"
TASK_DURATION = "Task Duration(us)"
TASK_WAIT = "Task Wait(us)"
COUNT = "Count"
TOTAL_TIME = "Total Time(us)"
AVG_TIME = "Avg Time(us)"
MIN_TIME = "Min Time(us)"
MAX_TIME = "Max Time(us)"
RATIO = "Ratio(%)"

TASK_TIME_COLUMNS = [DEVICE_ID, MODEL_ID, ITERATION_ID, OP_NAME, OP_TYPE, TASK_TYPE, STREAM_ID, TASK_START, TASK_DURATION, TASK_WAIT]
STAT_COLUMNS = [COUNT, TOTAL_TIME, AVG_TIME, MIN_TIME, MAX_TIME, RATIO]
OP_SUMMARY_COLUMNS = [DEVICE_ID, MODEL_ID, OP_NAME, OP_TYPE] + STAT_COLUMNS
OP_STATISTIC_COLUMNS = [DEVICE_ID, MODEL_ID, OP_TYPE] + STAT_COLUMNS

_FRACTION = [f"{i:03d}" for i in range(1000)]
# Rows formatted per batch: bounds the text held in memory while writing millions of rows.
CSV_BATCH_ROWS = 250_000


def csv_cell(text: str) -> str:
    """``text`` as one CSV cell (quoted only when it holds a comma, quote or line break)."""
    if any(c in text for c in ',"\r\n'):
        return '"' + text.replace('"', '""') + '"'
    return text


def format_us(ns: Iterable[int]) -> list[str]:
    """Integer nanoseconds -> exact microsecond strings with 3 decimals (``1234567`` -> ``1234.567``)."""
    out = []
    for v in ns:
        sign = "-" if v < 0 else ""
        whole, frac = divmod(abs(int(v)), 1000)
        out.append(f"{sign}{whole}.{_FRACTION[frac]}")
    return out


def task_time_header() -> str:
    return ",".join(TASK_TIME_COLUMNS) + "\n"


def task_time_lines(table: TaskTable, batch_rows: int = CSV_BATCH_ROWS) -> Iterator[str]:
    """The task_time CSV rows of one device, as text batches (no header), in table order."""
    frame = table.frame
    names = [csv_cell(n) for n in table.names]
    types = [csv_cell(t) for t in table.op_types]
    task_types = list(TASK_TYPES)
    device = str(table.device_id)
    cols = {k: frame[k].to_numpy() for k in ("model_id", "iteration_id", "name", "op_type", "task_type", "stream_id", "start_ns", "end_ns", "wait_ns")}
    fr = _FRACTION
    for lo in range(0, len(frame), batch_rows):
        part = {k: v[lo : lo + batch_rows] for k, v in cols.items()}
        start = part["start_ns"]
        dur = part["end_ns"] - start
        wait = part["wait_ns"]
        fixed = (part["model_id"].tolist(), part["iteration_id"].tolist(), part["name"].tolist(), part["op_type"].tolist(),
                 part["task_type"].tolist(), part["stream_id"].tolist())
        if (dur < 0).any() or (start < 0).any():  # broken clocks only: exact but slower formatting
            rows = zip(*fixed, format_us(start.tolist()), format_us(dur.tolist()), format_us(wait.tolist()))
            yield "".join(
                [f"{device},{m},{i},{names[n]},{types[t]},{task_types[k]},{sid},{s},{d},{w}\n" for m, i, n, t, k, sid, s, d, w in rows]
            )
            continue
        rows = zip(
            *fixed,
            (start // 1000).tolist(), (start % 1000).tolist(), (dur // 1000).tolist(), (dur % 1000).tolist(),
            (wait // 1000).tolist(), (wait % 1000).tolist(),
        )
        yield "".join(
            [
                f"{device},{m},{i},{names[n]},{types[t]},{task_types[k]},{sid},{a}.{fr[b]},{c}.{fr[d]},{e}.{fr[f]}\n"
                for m, i, n, t, k, sid, a, b, c, d, e, f in rows
            ]
        )


def _traced_time_us(table: TaskTable) -> pd.Series:
    """Per model id: the summed Iteration Time (µs) of its traced iterations (NaN if none known)."""
    it = table.iterations
    return it.groupby("model_id")["iteration_time_us"].sum(min_count=1)


def _stats(table: TaskTable, key: str) -> pd.DataFrame:
    """Count/total/min/max (ns) per (model_id, key) plus the op type of each name."""
    frame = table.frame
    dur = (frame["end_ns"] - frame["start_ns"]).rename("dur")
    cols = [frame["model_id"], frame[key]] + ([frame["op_type"]] if key == "name" else [])
    grouped = dur.groupby(cols, sort=False)
    out = grouped.agg(["count", "sum", "min", "max"]).reset_index()
    return out


def _stat_frame(table: TaskTable, key: str) -> pd.DataFrame:
    stats = _stats(table, key)
    traced = _traced_time_us(table)
    frame = pd.DataFrame({DEVICE_ID: table.device_id, MODEL_ID: stats["model_id"].astype("int64")})
    if key == "name":
        frame[OP_NAME] = [table.names[c] for c in stats["name"].tolist()]
        frame[OP_TYPE] = [table.op_types[c] for c in stats["op_type"].tolist()]
    else:
        frame[OP_TYPE] = [table.op_types[c] for c in stats["op_type"].tolist()]
    total = stats["sum"].to_numpy(dtype=np.int64)
    count = stats["count"].to_numpy(dtype=np.int64)
    frame[COUNT] = count
    frame["_total_ns"] = total
    frame[TOTAL_TIME] = format_us(total.tolist())
    frame[AVG_TIME] = format_us(np.floor(total / np.maximum(count, 1) + 0.5).astype(np.int64).tolist())
    frame[MIN_TIME] = format_us(stats["min"].tolist())
    frame[MAX_TIME] = format_us(stats["max"].tolist())
    denominator = traced.reindex(stats["model_id"]).to_numpy(dtype="float64")
    ratio = total / 1000.0 / denominator * 100.0
    frame[RATIO] = [NA if not np.isfinite(r) else f"{r:.3f}" for r in ratio]
    name_key = [OP_NAME] if key == "name" else []
    frame = frame.sort_values([DEVICE_ID, MODEL_ID, "_total_ns"] + name_key + [OP_TYPE], ascending=[True, True, False] + [True] * (len(name_key) + 1), kind="mergesort")
    return frame.drop(columns="_total_ns").reset_index(drop=True)


def op_summary_frame(table: TaskTable) -> pd.DataFrame:
    """One row per (Model ID, Op Name), by Total Time descending (columns ``OP_SUMMARY_COLUMNS``)."""
    return _stat_frame(table, "name")[OP_SUMMARY_COLUMNS]


def op_statistic_frame(table: TaskTable) -> pd.DataFrame:
    """One row per (Model ID, Op Type), by Total Time descending (columns ``OP_STATISTIC_COLUMNS``)."""
    return _stat_frame(table, "op_type")[OP_STATISTIC_COLUMNS]


def frames_to_csv(frames: Sequence[pd.DataFrame], columns: list[str]) -> str:
    """Several devices' tables as one CSV text (header once)."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(columns)
    for frame in frames:
        writer.writerows(frame[columns].itertuples(index=False, name=None))
    return buffer.getvalue()
