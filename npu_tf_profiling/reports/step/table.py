"""The step-trace table (CANN msprof ``step_trace_*.csv``), computed with pandas.

Column order, definitions and N/A rules follow `docs/output_format.md`:

    Device_id, Iteration ID, FP Start(us), BP End(us), Iteration End(us),
    Iteration Time(us), FP to BP Time(us), Iteration Refresh(us),
    Data Aug Bound(us), Model ID,
    [Reduce Start(us), Reduce Duration(us)] x largest group count (none if no reduce data),
    GetNext Start(us), GetNext End(us), GetNext Time(us)      (our extension)

Number rule: **whole microseconds since the Unix epoch**. Every raw timestamp
is rounded (half up) to the microsecond *first*, and every duration is the
difference of those rounded values, so each formula holds exactly on the
numbers written in the CSV (FP to BP = BP End − FP Start to the digit). The
raw clock (``tf.timestamp``: float64 seconds) only resolves about 0.24 µs at
today's epoch, so a decimal place would mostly print noise.

"Previous iteration" means the record of the same Model ID whose Iteration ID
is exactly one less. Normally that is simply the row above. If a record is
missing (a corrupt line was skipped, or step-based ids jump), the iteration is
treated like a first one: Data Aug Bound is N/A and Iteration Time is
Iteration End − FP Start, rather than silently spanning the hole.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence

import numpy as np
import pandas as pd

from npu_tf_profiling.raw_format import layout
from npu_tf_profiling.reports.encoders.csv_file import int_column, write_int_csv
from npu_tf_profiling.reports.step.records import ITERATION_ID, pair_array, pair_counts

NA = "N/A"

DEVICE_ID = "Device_id"
ITERATION_ID_COL = "Iteration ID"
FP_START = "FP Start(us)"
BP_END = "BP End(us)"
ITERATION_END = "Iteration End(us)"
ITERATION_TIME = "Iteration Time(us)"
FP_TO_BP = "FP to BP Time(us)"
ITERATION_REFRESH = "Iteration Refresh(us)"
DATA_AUG_BOUND = "Data Aug Bound(us)"
MODEL_ID = "Model ID"
REDUCE_START = "Reduce Start(us)"
REDUCE_DURATION = "Reduce Duration(us)"
GETNEXT_START = "GetNext Start(us)"
GETNEXT_END = "GetNext End(us)"
GETNEXT_TIME = "GetNext Time(us)"

BASE_COLUMNS = [
    DEVICE_ID,
    ITERATION_ID_COL,
    FP_START,
    BP_END,
    ITERATION_END,
    ITERATION_TIME,
    FP_TO_BP,
    ITERATION_REFRESH,
    DATA_AUG_BOUND,
    MODEL_ID,
]
GETNEXT_COLUMNS = [GETNEXT_START, GETNEXT_END, GETNEXT_TIME]


def csv_header(n_reduce: int) -> list[str]:
    """The full header for a table with ``n_reduce`` all-reduce groups.

    The Reduce names repeat (as msprof writes them), so code that needs one
    group's values should index by position: see ``reduce_positions``.
    """
    return BASE_COLUMNS + [REDUCE_START, REDUCE_DURATION] * n_reduce + GETNEXT_COLUMNS


def reduce_positions(k: int) -> tuple[int, int]:
    """Column positions of (Reduce Start, Reduce Duration) for group ``k`` (0-based)."""
    first = len(BASE_COLUMNS) + 2 * k
    return first, first + 1


@dataclass
class StepTraceTable:
    """One step-trace table: rows for one or more devices, all Int64 (nullable) µs.

    ``frame`` carries unique internal column names (``Reduce Start(us)#k``)
    because pandas handles duplicate labels badly; ``to_csv`` writes the
    msprof names. ``has_previous`` says, per row, whether the previous iteration
    of the same model is known (i.e. Iteration Time spans previous end → end):
    the summary uses it to leave out warm-up/first iterations.
    """

    frame: pd.DataFrame
    n_reduce: int
    has_previous: pd.Series

    def __len__(self) -> int:
        return len(self.frame)

    def reduce_start(self, k: int) -> pd.Series:
        return self.frame[reduce_start_key(k)]

    def reduce_duration(self, k: int) -> pd.Series:
        return self.frame[reduce_duration_key(k)]

    def reduce_arrays(self) -> tuple[np.ndarray, np.ndarray]:
        """(Reduce Start, Reduce Duration) of every group as two (rows, n_reduce) float arrays, NaN where unknown.

        One conversion of all the columns: callers that walk every group stay fast on wide tables.
        """
        if self.n_reduce == 0:
            empty = np.zeros((len(self.frame), 0))
            return empty, empty
        starts, durations = np.empty((len(self.frame), self.n_reduce)), np.empty((len(self.frame), self.n_reduce))
        for k in range(self.n_reduce):  # column by column: a frame's to_numpy of Int64 columns goes through objects
            starts[:, k] = float_values(self.frame[reduce_start_key(k)])
            durations[:, k] = float_values(self.frame[reduce_duration_key(k)])
        return starts, durations

    def total_reduce(self) -> pd.Series:
        """Per row, the summed Reduce Duration over all groups (NA when none measured)."""
        if self.n_reduce == 0:
            return pd.Series(pd.NA, index=self.frame.index, dtype="Int64")
        cols = [reduce_duration_key(k) for k in range(self.n_reduce)]
        return self.frame[cols].sum(axis=1, min_count=1).astype("Int64")

    def csv_frame(self) -> pd.DataFrame:
        """The table with msprof column names (duplicates for Reduce pairs)."""
        out = self.frame[_internal_columns(self.n_reduce)].copy()
        out.columns = csv_header(self.n_reduce)
        return out

    def to_csv(self) -> str:
        """CSV text: header in the documented order, integers, ``N/A`` for every missing value."""
        return self.csv_frame().to_csv(index=False, na_rep=NA, lineterminator="\n")


def write_step_trace_csv(table: StepTraceTable, path: Path) -> None:
    """Write ``table.to_csv()``'s bytes to ``path``, streamed from the columns (a million rows in about a second)."""
    columns = [int_column(table.frame[name]) for name in _internal_columns(table.n_reduce)]
    write_int_csv(path, csv_header(table.n_reduce), columns, missing=NA)


def reduce_start_key(k: int) -> str:
    """Unique column name of group ``k``'s (0-based) Reduce Start in ``StepTraceTable.frame``."""
    return f"{REDUCE_START}#{k}"


def reduce_duration_key(k: int) -> str:
    """Unique column name of group ``k``'s (0-based) Reduce Duration in ``StepTraceTable.frame``."""
    return f"{REDUCE_DURATION}#{k}"


def _internal_columns(n_reduce: int) -> list[str]:
    cols = list(BASE_COLUMNS)
    for k in range(n_reduce):
        cols += [reduce_start_key(k), reduce_duration_key(k)]
    return cols + GETNEXT_COLUMNS


def float_values(column: pd.Series) -> np.ndarray:
    """A numeric column (nullable Int64 or not) as float64, NaN where unknown.

    ``to_numpy`` straight to float: an ``astype("float64")`` first costs five times as much on a 1,000-row column.
    """
    return column.to_numpy(dtype="float64", na_value=np.nan)


def _whole_us_array(values: np.ndarray) -> np.ndarray:
    """Float µs (NaN: missing) rounded half up to whole µs, still float64 (NaN kept)."""
    return np.floor(values + 0.5)


def _int64_column(values: np.ndarray) -> pd.arrays.IntegerArray:
    """A float64 array of whole numbers (NaN: missing) as a nullable Int64 column."""
    missing = np.isnan(values)
    return pd.arrays.IntegerArray(np.where(missing, 0, values).astype(np.int64), missing)


def _spans(pairs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """GetNext span of each iteration: earliest start, latest end.

    If any pair lacks its start (or end), the earliest start (latest end) is
    unknown, so it is reported missing rather than guessed from the others.
    """
    if pairs.shape[1] == 0:
        return np.full(len(pairs), np.nan), np.full(len(pairs), np.nan)
    # NaN propagates (one unknown makes it unknown); the padding (+inf starts, -inf ends) never wins, and
    # a record with no pairs at all keeps it, which means unknown too.
    start, end = pairs[:, :, 0].min(axis=1), pairs[:, :, 1].max(axis=1)
    return np.where(np.isinf(start), np.nan, start), np.where(np.isinf(end), np.nan, end)


def max_reduce_groups(raw: pd.DataFrame) -> int:
    """The largest number of all-reduce groups on any record (0 if none)."""
    if raw.empty:
        return 0
    return int(raw[layout.K_REDUCE].max())


def compute_step_trace(raw: pd.DataFrame, device_id: int, n_reduce: Optional[int] = None) -> StepTraceTable:
    """Compute the step-trace table of one device from ``raw.read_training_trace``'s frame.

    ``n_reduce`` forces the number of Reduce pairs (used when several devices
    share one CSV and the widest decides); by default it is this device's max.
    Rows come out sorted by Model ID, then Iteration End.
    """
    if n_reduce is None:
        n_reduce = max_reduce_groups(raw)
    raw = _sorted_rows(raw)
    index = raw.index
    # numpy on float64 (NaN: unknown) throughout, Int64 columns made once at the end: on a 1,000-row rank, pandas'
    # nullable arithmetic and groupby cost more than the numbers (the cluster runs this once per rank). Whole µs
    # below 2**53 stay exact in float64, so every difference equals the Int64 one.
    fp = _whole_us_array(float_values(raw[layout.K_FP_START]))
    bp = _whole_us_array(float_values(raw[layout.K_BP_END]))
    end = _whole_us_array(float_values(raw[layout.K_ITERATION_END]))
    model = raw[layout.K_MODEL_ID].to_numpy(dtype="int64")
    ids = raw[ITERATION_ID].astype("Int64")
    id_known = ~ids.isna().to_numpy()
    id_values = ids.to_numpy(dtype="int64", na_value=0)

    # The previous row of the same model (rows are sorted by model) is the previous iteration when its id is one less.
    has_previous = np.zeros(len(raw), dtype=bool)
    has_previous[1:] = (model[1:] == model[:-1]) & id_known[1:] & id_known[:-1] & (id_values[:-1] == id_values[1:] - 1)
    prev_end = np.full(len(raw), np.nan)
    prev_end[1:] = end[:-1]
    prev_end[~has_previous] = np.nan
    iteration_time = np.where(has_previous, end - prev_end, end - fp)

    columns: dict[str, object] = {
        DEVICE_ID: pd.arrays.IntegerArray(np.full(len(raw), device_id, dtype=np.int64), np.zeros(len(raw), dtype=bool)),
        ITERATION_ID_COL: ids,
        FP_START: _int64_column(fp),
        BP_END: _int64_column(bp),
        ITERATION_END: _int64_column(end),
        ITERATION_TIME: _int64_column(iteration_time),
        FP_TO_BP: _int64_column(bp - fp),
        ITERATION_REFRESH: _int64_column(end - bp),
        DATA_AUG_BOUND: _int64_column(fp - prev_end),
        MODEL_ID: pd.arrays.IntegerArray(model.copy(), np.zeros(len(raw), dtype=bool)),
    }
    # Every pair column at once (one array per kind): a frame of thousands of groups stays one numpy pass.
    reduce = _whole_us_array(pair_array(raw, layout.K_REDUCE, n_reduce))
    gn_counts = pair_counts(raw, layout.K_GET_NEXT)
    get_next = pair_array(raw, layout.K_GET_NEXT, int(gn_counts.max(initial=0)))
    absent = np.arange(get_next.shape[1])[None, :] >= gn_counts[:, None]  # past a record's own pairs: never wins
    get_next[:, :, 0][absent], get_next[:, :, 1][absent] = np.inf, -np.inf
    gn_start, gn_end = (_whole_us_array(a) for a in _spans(get_next))
    for k in range(n_reduce):
        columns[reduce_start_key(k)] = _int64_column(reduce[:, k, 0])
        columns[reduce_duration_key(k)] = _int64_column(reduce[:, k, 1] - reduce[:, k, 0])
    columns[GETNEXT_START] = _int64_column(gn_start)
    columns[GETNEXT_END] = _int64_column(gn_end)
    columns[GETNEXT_TIME] = _int64_column(gn_end - gn_start)
    # One frame, built once in the final column order (no concat, no reselection: each would copy every column).
    frame = pd.DataFrame({name: columns[name] for name in _internal_columns(n_reduce)}, index=index, copy=False)
    return StepTraceTable(frame=frame, n_reduce=n_reduce, has_previous=pd.Series(has_previous, index=index))


def _sorted_rows(raw: pd.DataFrame) -> pd.DataFrame:
    """``raw`` by Model ID, Iteration End, line, on a fresh 0..n-1 index; itself when it is so already (the reader's order)."""
    keys = [layout.K_MODEL_ID, layout.K_ITERATION_END, "line"]
    if isinstance(raw.index, pd.RangeIndex) and raw.index.start == 0 and raw.index.step == 1:
        model, end, line = (raw[k].to_numpy() for k in keys)
        ordered = (model[1:] > model[:-1]) | ((model[1:] == model[:-1]) & (
            (end[1:] > end[:-1]) | ((end[1:] == end[:-1]) & (line[1:] >= line[:-1]))))
        if bool(ordered.all()):
            return raw
    return raw.sort_values(keys, kind="mergesort").reset_index(drop=True)


def widen(table: StepTraceTable, n_reduce: int) -> StepTraceTable:
    """The same table with ``n_reduce`` Reduce pairs, the added ones all N/A."""
    if n_reduce < table.n_reduce:
        raise ValueError(f"cannot narrow a table from {table.n_reduce} to {n_reduce} reduce groups")
    frame = table.frame.reindex(columns=_internal_columns(n_reduce))
    for k in range(table.n_reduce, n_reduce):
        for key in (reduce_start_key(k), reduce_duration_key(k)):
            frame[key] = frame[key].astype("Int64")
    return StepTraceTable(frame=frame, n_reduce=n_reduce, has_previous=table.has_previous)


def concat_tables(tables: Sequence[StepTraceTable]) -> StepTraceTable:
    """Stack tables (e.g. one per device), padding Reduce pairs to the widest."""
    if not tables:
        return empty_table()
    n_reduce = max(t.n_reduce for t in tables)
    widened = [widen(t, n_reduce) for t in tables]
    frame = pd.concat([t.frame for t in widened], ignore_index=True)
    has_previous = pd.concat([t.has_previous for t in widened], ignore_index=True)
    return StepTraceTable(frame=frame, n_reduce=n_reduce, has_previous=has_previous)


def empty_table() -> StepTraceTable:
    """A table with no rows and no Reduce columns."""
    frame = pd.DataFrame({c: pd.Series(dtype="Int64") for c in _internal_columns(0)})
    return StepTraceTable(frame=frame, n_reduce=0, has_previous=pd.Series(dtype=bool))
