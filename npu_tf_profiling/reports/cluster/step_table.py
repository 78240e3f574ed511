"""``cluster_step_trace_time.csv``: where each rank's iteration time goes, in the msprof-analyze format.

One row per (step, rank): ``Type`` = ``rank``, ``Index`` = the rank. msprof-analyze
adds ``stage`` rows (the maximum over a pipeline stage's ranks) only for jobs
with pipeline-parallel groups; a data-parallel job has none, so neither does
this table: it equals msprof-analyze's table of the same run (see
``docs/msprof_layout.md``). ``stage_rows`` still gives the per-step maximum over
the ranks for the slow-rank analysis, and missing steps are listed in ``slow_rank.json``.

Columns (µs, whole numbers; ``N/A`` when unknown). The first twelve are
msprof-analyze's; it derives them from per-op task times, which a step trace
does not have, so here they come from the step-trace points of the iteration
window [previous Iteration End, Iteration End] (FP Start for a first
iteration, as Iteration Time does):

=============================================== ===========================================================
``Step``                                         Iteration ID (the global step: it lines up across ranks)
``Type`` / ``Index``                             ``rank`` / rank id
``Computing``                                    FP Start -> BP End (forward + backward), plus the time
                                                 after BP End not covered by an all-reduce (optimizer update)
``Communication(Not Overlapped)``                ``Communication`` - ``Overlapped``
``Overlapped``                                   all-reduce time inside FP Start -> BP End (hidden behind
                                                 the backward pass, e.g. Horovod's per-layer reduces)
``Communication``                                union of the Reduce Start -> End intervals of all groups
``Free``                                         the rest of the iteration: ``Iteration Time`` - Computing -
                                                 Communication(Not Overlapped); normally the Data Aug Bound
``Stage``                                        Computing + Communication(Not Overlapped) + Free - Bubble
                                                 (= Iteration Time)
``Bubble``                                       pipeline receive time: 0 (data parallel, no pipeline stages)
``Communication(Not Overlapped and Exclude      = Communication(Not Overlapped) (no receive ops)
Receive)``
``Preparing``                                    iteration start -> its first traced op (GetNext Start,
                                                 else FP Start); N/A for a first iteration
``Data Aug Bound`` / ``Iteration Time`` /        as in the rank's step_trace CSV (`docs/output_format.md`)
``FP to BP Time``
``Reduce``                                       summed Reduce Duration over the groups (how long this rank
                                                 sat in all-reduces: waiting ranks show long ones)
``Model ID``                                     the rank's graph (one per distinct training graph)
=============================================== ===========================================================

Everything is computed column-wise with numpy/pandas over all ranks at once.
"""
from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd

from npu_tf_profiling.reports.step import table as st

CSV_NAME = "cluster_step_trace_time.csv"

STEP = "Step"
TYPE = "Type"
INDEX = "Index"
COMPUTING = "Computing"
COMM_NOT_OVERLAPPED = "Communication(Not Overlapped)"
OVERLAPPED = "Overlapped"
COMMUNICATION = "Communication"
FREE = "Free"
STAGE = "Stage"
BUBBLE = "Bubble"
COMM_NOT_OVERLAPPED_EXCL_RECEIVE = "Communication(Not Overlapped and Exclude Receive)"
PREPARING = "Preparing"
DATA_AUG_BOUND = "Data Aug Bound"
ITERATION_TIME = "Iteration Time"
FP_TO_BP = "FP to BP Time"
REDUCE = "Reduce"
MODEL_ID = "Model ID"

TYPE_RANK = "rank"
TYPE_STAGE = "stage"

VALUE_COLUMNS = [
    COMPUTING,
    COMM_NOT_OVERLAPPED,
    OVERLAPPED,
    COMMUNICATION,
    FREE,
    STAGE,
    BUBBLE,
    COMM_NOT_OVERLAPPED_EXCL_RECEIVE,
    PREPARING,
    DATA_AUG_BOUND,
    ITERATION_TIME,
    FP_TO_BP,
    REDUCE,
]
COLUMNS = [STEP, TYPE, INDEX] + VALUE_COLUMNS + [MODEL_ID]


def union_length(starts: np.ndarray, ends: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> np.ndarray:
    """Per row, the length of the union of intervals [starts[:, k], ends[:, k]] clipped to [lo, hi].

    ``starts``/``ends``: (rows, k) float arrays, NaN for a missing interval; an
    interval that is empty after clipping counts 0. Rows whose ``lo`` or ``hi``
    is NaN give NaN. See ``union_lengths``.
    """
    return union_lengths(starts, ends, [(lo, hi)])[0]


def union_lengths(starts: np.ndarray, ends: np.ndarray, windows: list[tuple[np.ndarray, np.ndarray]]) -> list[np.ndarray]:
    """``union_length`` of the same intervals in each (lo, hi) window, the intervals sorted once.

    A sweep over the k interval slots, each a whole column of rows at once:
    with the intervals sorted by start, each adds the part of it (clipped to
    the window) past the furthest end of those before it. A missing interval
    becomes [-inf, -inf], clipped to [lo, lo]: it adds nothing and reaches no
    further than the window's start; so does an empty or reversed one. On whole
    µs every sum is exact, so the order of the additions changes no digit.
    The slots are laid out (k, rows), contiguous per slot: numpy's reductions
    along a short last axis cost more than the arithmetic on 1,000-row ranks.
    """
    missing = np.isnan(starts) | np.isnan(ends)
    s, e = np.where(missing, -np.inf, starts).T, np.where(missing, -np.inf, ends).T
    if len(s) > 1 and not (s[1:] >= s[:-1]).all():  # groups are mostly in time order already
        order = np.argsort(s, axis=0, kind="stable")
        s, e = np.take_along_axis(s, order, axis=0), np.take_along_axis(e, order, axis=0)
    s, e = np.ascontiguousarray(s), np.ascontiguousarray(e)
    lengths = []
    for lo, hi in windows:
        total, reach = np.zeros(len(lo)), np.full(len(lo), -np.inf)
        with np.errstate(invalid="ignore"):
            clipped_s, clipped_e = np.minimum(np.maximum(s, lo), hi), np.minimum(np.maximum(e, lo), hi)
            for slot_s, slot_e in zip(clipped_s, clipped_e):
                total += np.maximum(slot_e - np.maximum(slot_s, reach), 0.0)
                reach = np.maximum(reach, slot_e)
        total[np.isnan(lo) | np.isnan(hi)] = np.nan
        lengths.append(total)
    return lengths


def rank_rows(table: st.StepTraceTable) -> pd.DataFrame:
    """One row per (model, step, rank): the ``COLUMNS`` values (float µs, NaN unknown).

    Sorted by Model ID, Step, rank; ``Index`` holds the rank as an int.
    """
    frame = table.frame
    end = st.float_values(frame[st.ITERATION_END])
    it_time = st.float_values(frame[st.ITERATION_TIME])
    fp = st.float_values(frame[st.FP_START])
    bp = st.float_values(frame[st.BP_END])
    start = end - it_time
    rs, rd = table.reduce_arrays()
    if table.n_reduce:
        reduce_total = np.where(np.isnan(rd).all(axis=1), np.nan, np.nansum(rd, axis=1)) if len(frame) else np.zeros(0)
    else:
        reduce_total = np.full(len(frame), np.nan)
    re = rs + rd
    windows = [(start, end), (np.maximum(fp, start), bp), (bp, end)]
    communication, overlapped, comm_after_bp = union_lengths(rs, re, windows)
    computing = (bp - fp) + (end - bp) - comm_after_bp
    not_overlapped = communication - overlapped
    free = it_time - computing - not_overlapped
    has_previous = table.has_previous.to_numpy(dtype=bool)
    getnext_start = st.float_values(frame[st.GETNEXT_START])
    first_op = np.where(np.isnan(getnext_start), fp, getnext_start)
    preparing = np.where(has_previous, np.maximum(first_op - start, 0.0), np.nan)
    columns = {
        STEP: frame[st.ITERATION_ID_COL].to_numpy(dtype="int64"),
        TYPE: TYPE_RANK,
        INDEX: frame[st.DEVICE_ID].to_numpy(dtype="int64"),
        COMPUTING: computing,
        COMM_NOT_OVERLAPPED: not_overlapped,
        OVERLAPPED: overlapped,
        COMMUNICATION: communication,
        FREE: free,
        STAGE: computing + not_overlapped + free,
        BUBBLE: np.where(np.isnan(it_time), np.nan, 0.0),
        COMM_NOT_OVERLAPPED_EXCL_RECEIVE: not_overlapped,
        PREPARING: preparing,
        DATA_AUG_BOUND: st.float_values(frame[st.DATA_AUG_BOUND]),
        ITERATION_TIME: it_time,
        FP_TO_BP: st.float_values(frame[st.FP_TO_BP]),
        REDUCE: reduce_total,
        MODEL_ID: frame[st.MODEL_ID].to_numpy(dtype="int64"),
    }
    # A stable sort (as sort_values' mergesort) of the columns, skipped when the table is in that order already
    # (one device's table normally is): sorting the frame would cost more than building it.
    order = np.lexsort((columns[INDEX], columns[STEP], columns[MODEL_ID]))
    if not (order == np.arange(len(order))).all():
        columns = {name: values[order] if isinstance(values, np.ndarray) else values for name, values in columns.items()}
    return pd.DataFrame(columns)


def _index_label(ranks: Sequence[int]) -> str:
    return "(" + ", ".join(str(r) for r in ranks) + ")"


def stage_rows(ranks: pd.DataFrame) -> pd.DataFrame:
    """Per (model, step): the max of each value column over the ranks that have the step."""
    if ranks.empty:
        return pd.DataFrame(columns=COLUMNS)
    grouped = ranks.groupby([MODEL_ID, STEP], sort=True)
    maxima = grouped[VALUE_COLUMNS].max().reset_index()
    members = grouped[INDEX].agg(lambda s: _index_label(sorted(s.tolist()))).reset_index(drop=True)
    maxima[TYPE] = TYPE_STAGE
    maxima[INDEX] = members.to_numpy()
    return maxima[COLUMNS]


def as_csv_rows(ranks: pd.DataFrame) -> pd.DataFrame:
    """``rank_rows``' rows as the CSV has them: ``Index`` as text, the ``COLUMNS`` in order."""
    out = ranks.copy() if list(ranks.columns) == COLUMNS else ranks[COLUMNS].copy()  # rank_rows' columns: no reselection
    out[INDEX] = out[INDEX].astype(str)
    return out


def cluster_step_trace_time(table: st.StepTraceTable) -> pd.DataFrame:
    """The CSV's rows: one per (model, step, rank), ``Index`` as text (msprof-analyze's table has no stage rows here)."""
    return as_csv_rows(rank_rows(table))


def whole_us(values: pd.Series) -> pd.Series:
    """µs floats rounded half up to whole µs (nullable Int64): the numbers every CSV of the cluster shows."""
    return pd.Series(np.floor(values.astype("float64").to_numpy() + 0.5), index=values.index).astype("Int64")


def csv_lines(rows: pd.DataFrame) -> str:
    """The CSV's lines for ``rows`` (``as_csv_rows``' columns), without the header: what ``to_csv`` writes below it.

    Values are ``whole_us`` (``N/A`` when unknown). All cells go into one
    object array (ints as ints, text as text) and one ``%`` format call writes
    every line at once: the per-value cost is the int's decimal text alone.
    ``%s`` writes ``str`` of each cell, as ``astype(str)`` would; ten times
    faster than ``DataFrame.to_csv`` on these columns (every rank formats its own lines).
    """
    if rows.empty:
        return ""
    cells = np.empty((len(rows), len(COLUMNS)), dtype=object)
    cells[:, 0] = rows[STEP].to_numpy(dtype="int64")
    cells[:, 1] = rows[TYPE].to_numpy()
    cells[:, 2] = rows[INDEX].to_numpy()
    whole = np.empty((len(rows), len(VALUE_COLUMNS)))
    for j, name in enumerate(VALUE_COLUMNS):  # column by column: no reselection of the frame
        whole[:, j] = rows[name].to_numpy(dtype="float64", na_value=np.nan)
    whole = np.floor(whole + 0.5)
    unknown = np.isnan(whole)
    values = cells[:, 3:3 + len(VALUE_COLUMNS)]  # a view: the assignments below fill ``cells``
    values[...] = np.where(unknown, 0.0, whole).astype(np.int64)
    values[unknown] = st.NA
    cells[:, -1] = rows[MODEL_ID].to_numpy(dtype="int64")
    line = ",".join(["%s"] * len(COLUMNS)) + "\n"
    return (line * len(rows)) % tuple(cells.ravel().tolist())


def to_csv(rows: pd.DataFrame) -> str:
    """CSV text: whole µs, ``N/A`` for unknown values."""
    return ",".join(COLUMNS) + "\n" + csv_lines(rows)
