"""Read one device folder's raw data (``info.json`` + ``training_trace.bin`` and/or ``.jsonl``).

The runtime appends binary frames of records (``raw_format.training_frame``);
earlier runs and the synthetic generators wrote one JSON object per line. Both
are read. The writer may be killed at any moment, so the reader must never
trust the end of a file, and must never hide that it dropped something: every
skipped line or record is counted, listed with its number in a
``RawDataWarning``, and kept in ``TraceRead.skipped``.

The record contract lives in ``npu_tf_profiling.raw_format.layout``; this module only reads
it and turns it into a pandas DataFrame with one row per record and a derived
``iteration_id`` column (see ``assign_iteration_ids`` for the rule).
"""
from __future__ import annotations

import json
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

import numpy as np
import pandas as pd

from npu_tf_profiling.raw_format import layout
from npu_tf_profiling.raw_format.errors import RawDataWarning
from npu_tf_profiling.raw_format.metadata import read_json_object
from npu_tf_profiling.raw_format.run_info import RunInfo
from npu_tf_profiling.raw_format.training_frame import (
    MAX_GET_NEXT_PAIRS,
    MAX_REDUCE_PAIRS,
    NO_STEP,
    PLAUSIBLE_US,
    DamagedBytes,
    Frame,
    decode_frames,
)
from npu_tf_profiling.raw_format.training_record import parse_record

# Columns of the DataFrame returned by ``read_training_trace`` (in this order).
RAW_COLUMNS = [
    "line",  # 1-based line number in the .jsonl file (record number in the .bin file), for messages
    layout.K_MODEL_ID,
    layout.K_RUN,
    layout.K_STEP,
    layout.K_FP_START,
    layout.K_BP_END,
    layout.K_ITERATION_END,
    layout.K_GET_NEXT,  # how many GetNext (start, end) pairs the record has; the pairs are PAIR_COLUMNS
    layout.K_REDUCE,  # how many all-reduce (start, end) pairs the record has
]
# After RAW_COLUMNS, each pair k (from 0) of a kind is two float columns ``pair_column(kind, k, "start"/"end")``,
# NaN where not measured and past the record's own count. Columns, not a list of tuples per record: a
# million-iteration run would otherwise hold ~340 MB of Python tuples for two floats each.


def pair_column(kind: str, k: int, end: str) -> str:
    """Name of pair ``k``'s ``end`` ("start" or "end") of ``kind`` (``layout.K_GET_NEXT`` / ``K_REDUCE``)."""
    return f"{kind}#{k}.{end}"


def pair_array(frame: pd.DataFrame, kind: str, width: int) -> np.ndarray:
    """The ``kind`` pairs of every record as a (records, width, 2) float array; NaN where unknown or absent."""
    out = np.full((len(frame), width, 2), np.nan)
    for k in range(width):
        for j, end in enumerate(("start", "end")):
            name = pair_column(kind, k, end)
            if name in frame.columns:
                out[:, k, j] = frame[name].to_numpy(dtype="float64")
    return out


def pair_counts(frame: pd.DataFrame, kind: str) -> np.ndarray:
    """How many ``kind`` pairs each record has."""
    return frame[kind].to_numpy(dtype="int64")


def _pair_frame(kind: str, lists: list[list[tuple[Optional[float], Optional[float]]]]) -> dict[str, Any]:
    """Per-record lists of pairs (JSON records) as the count column and the pair columns."""
    width = max(map(len, lists), default=0)
    values = np.full((len(lists), width, 2), np.nan)
    for row, pairs in enumerate(lists):
        if pairs:
            values[row, :len(pairs)] = np.asarray(pairs, dtype=np.float64)
    columns: dict[str, Any] = {kind: np.fromiter(map(len, lists), dtype=np.int64, count=len(lists))}
    for k in range(width):
        columns[pair_column(kind, k, "start")] = values[:, k, 0]
        columns[pair_column(kind, k, "end")] = values[:, k, 1]
    return columns
ITERATION_ID = "iteration_id"
ID_FROM_STEP = "step"
ID_FROM_RUN = "run"

# At most this many line numbers are spelled out in one warning.
_MAX_LINES_IN_WARNING = 10


@dataclass(frozen=True)
class SkippedLine:
    """One line of a raw file that could not be used, and why."""

    line: int
    reason: str


@dataclass
class TraceRead:
    """The usable records of one ``training_trace.jsonl`` plus what was skipped.

    ``frame`` has ``RAW_COLUMNS`` plus ``iteration_id``, sorted by model then
    iteration end. ``id_source`` maps each model id to ``"step"`` or ``"run"``.
    """

    path: Path
    frame: pd.DataFrame
    skipped: list[SkippedLine] = field(default_factory=list)
    id_source: dict[int, str] = field(default_factory=dict)

    @property
    def skipped_count(self) -> int:
        return len(self.skipped)


@dataclass
class DeviceRaw:
    """Everything read from one ``device_<id>`` folder."""

    device_id: int
    device_dir: Path
    info: RunInfo
    trace: Optional[TraceRead]  # None when the folder has no training_trace file


# How the reader types each column (pair columns are float64, NaN where not measured or absent).
_INT_COLUMNS = ("line", layout.K_MODEL_ID, layout.K_GET_NEXT, layout.K_REDUCE)
_NULLABLE_INT_COLUMNS = (layout.K_RUN, layout.K_STEP)
Block = dict[str, Any]  # one block of records: RAW_COLUMNS (and its pair columns) as arrays or lists


def _pair_order(name: str) -> tuple[str, int, bool]:
    kind, rest = name.split("#")
    return kind, int(rest.split(".")[0]), name.endswith(".end")


def _stack(blocks: list[Block]) -> pd.DataFrame:
    """The blocks' records as one typed frame: ``RAW_COLUMNS``, then the pair columns by kind and pair.

    Each column is concatenated and typed once, and the frame is built once: a
    concat of per-block frames followed by a cast per column costs more than
    the numbers on a rank of 1,000 records (the cluster reads one per rank). A
    pair column a block lacks is NaN there.
    """
    pairs = sorted({name for block in blocks for name in block if name not in RAW_COLUMNS}, key=_pair_order)
    columns: dict[str, Any] = {}
    for name in RAW_COLUMNS + pairs:
        if name in _NULLABLE_INT_COLUMNS:
            parts = [pd.array(block[name], dtype="Int64") for block in blocks]
            values = [part.to_numpy(dtype="int64", na_value=0) for part in parts]
            masks = [np.asarray(part.isna()) for part in parts]
            columns[name] = pd.arrays.IntegerArray(_concat(values, np.int64), _concat(masks, bool))
            continue
        dtype = np.int64 if name in _INT_COLUMNS else np.float64
        columns[name] = _concat([np.asarray(block[name], dtype=dtype) if name in block else np.full(len(block["line"]), np.nan)
                                 for block in blocks], dtype)
    return pd.DataFrame(columns, copy=False)


def _concat(arrays: list[np.ndarray], dtype: Any) -> np.ndarray:
    if len(arrays) == 1:
        return arrays[0]
    return np.concatenate(arrays) if arrays else np.zeros(0, dtype=dtype)


def _warn_skipped(path: Path, skipped: list[SkippedLine]) -> None:
    unit = "record" if path.suffix == ".bin" else "line"
    shown = "; ".join(f"{unit} {s.line}: {s.reason}" for s in skipped[:_MAX_LINES_IN_WARNING])
    more = len(skipped) - _MAX_LINES_IN_WARNING
    if more > 0:
        shown += f"; and {more} more"
    warnings.warn(
        f"{path}: skipped {len(skipped)} unreadable {unit}(s) ({shown})",
        RawDataWarning,
        stacklevel=4,
    )


def read_training_trace(path: Path | str) -> TraceRead:
    """Read one step-trace file, either format, skipping (and reporting) bad records.

    ``.bin`` files are read as binary frames, anything else as JSON lines.
    Raises ``OSError`` if the file cannot be read at all.
    """
    path = Path(path)
    return read_training_traces([path])


def _warn_implausible(path: Path, notes: _FileNotes) -> None:
    """One warning per file for the values left out as no clock reading, and one for pairs past the writer's bound."""
    unit = "record" if path.suffix == ".bin" else "line"
    if notes.implausible:
        numbers = sorted(notes.implausible)
        shown = ", ".join(str(n) for n in numbers[:_MAX_LINES_IN_WARNING]) + (", ..." if len(numbers) > _MAX_LINES_IN_WARNING else "")
        low, high = PLAUSIBLE_US
        warnings.warn(
            f"{path}: {notes.implausible_values} time value(s) in {len(numbers)} {unit}(s) ({unit} {shown}) are negative, "
            f"not finite or after the year 2100 (outside {low:.0f}..{high:.0f} µs since the epoch): left out (N/A)",
            RawDataWarning,
            stacklevel=4,
        )
    for what in notes.too_many_pairs:
        warnings.warn(f"{path}: {what}", RawDataWarning, stacklevel=4)


@dataclass
class _FileNotes:
    """What one file's reading left out without skipping a record: implausible times, pairs past the bound."""

    implausible: set[int] = field(default_factory=set)
    implausible_values: int = 0
    too_many_pairs: list[str] = field(default_factory=list)


def read_training_traces(paths: list[Path]) -> TraceRead:
    """Read the step-trace files of one device (binary and/or JSON lines) into one ``TraceRead``."""
    blocks: list[Block] = []
    skipped: list[SkippedLine] = []
    for path in paths:
        data = Path(path).read_bytes()
        notes = _FileNotes()
        if Path(path).suffix == ".bin":
            file_blocks, file_skipped = _frame_rows(data, notes)
        else:
            rows, file_skipped = _json_rows(data, notes)
            file_blocks = [_json_block(rows)] if rows else []
        if file_skipped:
            _warn_skipped(Path(path), file_skipped)
        _warn_implausible(Path(path), notes)
        blocks.extend(b for b in file_blocks if len(b["line"]))
        skipped.extend(file_skipped)
        del data, file_blocks  # the blocks hold copies: the file's bytes can go before the next file is read
    frame = _stack(blocks)
    blocks.clear()  # one copy of the rows in memory, not two
    shown = paths[0] if paths else Path()
    frame, id_source = assign_iteration_ids(frame, source=str(shown))
    return TraceRead(path=shown, frame=frame, skipped=skipped, id_source=id_source)


def _json_block(rows: list[dict[str, Any]]) -> Block:
    """JSON records as a block: their pair lists become the count and pair columns."""
    plain = [k for k in RAW_COLUMNS if k not in (layout.K_GET_NEXT, layout.K_REDUCE)]
    columns: Block = {k: [row[k] for row in rows] for k in plain}
    for kind in (layout.K_GET_NEXT, layout.K_REDUCE):
        columns.update(_pair_frame(kind, [row[kind] for row in rows]))
    return columns


def _json_rows(data: bytes, notes: _FileNotes) -> tuple[list[dict[str, Any]], list[SkippedLine]]:
    """One row per JSON line.

    Blank lines are ignored. A line that is not valid UTF-8 JSON, or whose
    object breaks the record contract, is skipped; so is an unterminated last
    line that does not parse (a torn write). An unterminated last line that
    *does* parse is kept: the record is complete, only the newline was lost.
    """
    lines = data.split(b"\n")
    torn_tail = not data.endswith(b"\n")
    rows: list[dict[str, Any]] = []
    skipped: list[SkippedLine] = []
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        is_last_unterminated = torn_tail and number == len(lines)
        try:
            row = parse_record(json.loads(raw.decode("utf-8")))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            reason = (
                "incomplete last line (the writer was probably stopped mid-write)"
                if is_last_unterminated
                else f"not valid JSON ({exc.__class__.__name__})"
            )
            skipped.append(SkippedLine(number, reason))
            continue
        except ValueError as exc:
            skipped.append(SkippedLine(number, f"not a training_trace record: {exc}"))
            continue
        if not _plausible(row[layout.K_ITERATION_END]):
            skipped.append(SkippedLine(number, f"not a training_trace record: {layout.K_ITERATION_END!r} is no clock reading ({row[layout.K_ITERATION_END]!r})"))
            continue
        for key, bound, what in ((layout.K_GET_NEXT, MAX_GET_NEXT_PAIRS, "GetNext"), (layout.K_REDUCE, MAX_REDUCE_PAIRS, "all-reduce")):
            if len(row[key]) > bound:
                notes.too_many_pairs.append(f"line {number} holds {len(row[key])} {what} pairs, and the writer writes at most {bound}: the first {bound} are read")
                row[key] = row[key][:bound]
        left_out = _blank_implausible(row)
        if left_out:
            notes.implausible.add(number)
            notes.implausible_values += left_out
        row["line"] = number
        rows.append(row)
    return rows, skipped


def _plausible(value: float | None) -> bool:
    low, high = PLAUSIBLE_US
    return value is not None and low <= value < high


def _blank_implausible(row: dict[str, Any]) -> int:
    """Set the times of a JSON record that are no clock reading to None; how many were."""
    count = 0
    for key in (layout.K_FP_START, layout.K_BP_END):
        if row[key] is not None and not _plausible(row[key]):
            row[key] = None
            count += 1
    for key in (layout.K_GET_NEXT, layout.K_REDUCE):
        pairs = row[key]
        for at, pair in enumerate(pairs):
            kept = tuple(v if v is None or _plausible(v) else None for v in pair)
            if kept != tuple(pair):
                count += sum(1 for a, b in zip(kept, pair) if a != b)
                pairs[at] = kept
    return count


def _frame_rows(data: bytes, notes: _FileNotes) -> tuple[list[Block], list[SkippedLine]]:
    """One block of rows per binary frame; a record without a plausible iteration end is skipped, as in the JSON reader."""
    blocks: list[Block] = []
    skipped: list[SkippedLine] = []
    for item in decode_frames(data):
        if isinstance(item, DamagedBytes):
            skipped.append(SkippedLine(item.record, f"{item.reason} at byte {item.offset}"))
            continue
        blocks.append(_rows_of_frame(item, skipped, notes))
    return blocks, skipped


def _plausible_times(frame: Frame, notes: _FileNotes) -> np.ndarray:
    """The frame's times with every value that is no clock reading (negative, inf, past 2100) as NaN, noted."""
    times = frame.rows["times"]
    low, high = PLAUSIBLE_US
    with np.errstate(invalid="ignore"):
        bad = ~np.isnan(times) & ~((times >= low) & (times < high))
    if not bad.any():
        return times
    # The iteration end decides whether the record is kept at all: its own check reports it.
    counted = bad[:, :-1]
    rows_with = np.flatnonzero(counted.any(axis=1))
    notes.implausible.update((frame.first_record + rows_with).tolist())
    notes.implausible_values += int(counted.sum())
    return np.where(bad, np.nan, times)


def _rows_of_frame(frame: Frame, skipped: list[SkippedLine], notes: _FileNotes) -> Block:
    """The frame's usable records as ``RAW_COLUMNS`` columns, built from its arrays (no dict per record)."""
    shape = frame.shape
    get_next_pairs = min(shape.get_next_pairs, MAX_GET_NEXT_PAIRS)
    reduce_pairs = min(shape.reduce_pairs, MAX_REDUCE_PAIRS)
    for what, claimed, kept in (("GetNext", shape.get_next_pairs, get_next_pairs), ("all-reduce", shape.reduce_pairs, reduce_pairs)):
        if claimed > kept:
            notes.too_many_pairs.append(
                f"the frame at byte {frame.offset} claims {claimed} {what} pairs per record, and the writer writes at most "
                f"{kept}: records {frame.first_record}..{frame.first_record + len(frame.rows) - 1} are read with the first {kept}"
            )
    times = _plausible_times(frame, notes)
    numbers = frame.first_record + np.arange(len(times))
    usable = ~np.isnan(times[:, -1])
    for number in numbers[~usable].tolist():
        skipped.append(SkippedLine(number, f"not a training_trace record: {layout.K_ITERATION_END!r} is missing or no clock reading"))
    times = times[usable]
    fp_at = 2 * shape.get_next_pairs
    bp_at = fp_at + shape.has_fp
    reduce_at = bp_at + shape.has_bp
    missing = np.full(len(times), np.nan)
    steps = frame.rows["step"][usable]
    return {
        "line": numbers[usable],
        layout.K_MODEL_ID: np.full(len(times), frame.model_id, dtype=np.int64),
        layout.K_RUN: pd.array(frame.rows["run"][usable].astype(np.int64), dtype="Int64"),
        layout.K_STEP: pd.arrays.IntegerArray(np.where(steps == NO_STEP, 0, steps).astype(np.int64),
                                              (steps == NO_STEP) | (not shape.has_step)),
        layout.K_FP_START: times[:, fp_at] if shape.has_fp else missing,
        layout.K_BP_END: times[:, bp_at] if shape.has_bp else missing,
        layout.K_ITERATION_END: times[:, -1],
        layout.K_GET_NEXT: np.full(len(times), get_next_pairs, dtype=np.int64),
        layout.K_REDUCE: np.full(len(times), reduce_pairs, dtype=np.int64),
        **{pair_column(layout.K_GET_NEXT, k, end): times[:, 2 * k + j]
           for k in range(get_next_pairs) for j, end in enumerate(("start", "end"))},
        **{pair_column(layout.K_REDUCE, k, end): times[:, reduce_at + 2 * k + j]
           for k in range(reduce_pairs) for j, end in enumerate(("start", "end"))},
    }


def assign_iteration_ids(frame: pd.DataFrame, source: str = "training_trace") -> tuple[pd.DataFrame, dict[int, str]]:
    """Sort by model then iteration end and add the ``iteration_id`` column.

    Rule, per model id: if every record has a ``step`` (the global step after
    the update) and those steps strictly increase with iteration end, the
    Iteration ID is the step, so that ranks of one distributed job line up on
    the same ids. Otherwise it is ``run``, the per-model counter of the graph's iterations
    (from 1). Falling back when steps exist but are unusable (some null,
    repeated or going backwards, e.g. a second graph that only reads the
    global step) is warned about, because ids then stop matching across ranks.
    """
    order = np.lexsort((frame["line"].to_numpy(), frame[layout.K_ITERATION_END].to_numpy(), frame[layout.K_MODEL_ID].to_numpy()))
    # A stable sort, as sort_values(kind="mergesort"); the reader's rows are mostly in this order already.
    in_order = isinstance(frame.index, pd.RangeIndex) and frame.index.start == 0 and frame.index.step == 1 \
        and bool((order == np.arange(len(order))).all())
    frame = frame.copy(deep=False) if in_order else frame.take(order)  # a new frame: the caller's gets no column
    frame.index = pd.RangeIndex(len(frame))
    model = frame[layout.K_MODEL_ID].to_numpy()
    steps, step_known = frame[layout.K_STEP].to_numpy(dtype="int64", na_value=0), ~np.asarray(frame[layout.K_STEP].isna())
    ids, id_known = np.zeros(len(frame), dtype=np.int64), np.zeros(len(frame), dtype=bool)
    id_source: dict[int, str] = {}
    firsts = (np.flatnonzero(np.diff(model)) + 1).tolist()  # the models' rows are contiguous now, in ascending order
    starts = [0, *firsts] if len(frame) else []
    for lo, hi in zip(starts, [*firsts, len(frame)]):
        model_id = int(model[lo])
        if step_known[lo:hi].all() and bool((np.diff(steps[lo:hi]) > 0).all()):  # known, unique and increasing
            ids[lo:hi], id_known[lo:hi] = steps[lo:hi], True
            id_source[model_id] = ID_FROM_STEP
            continue
        if step_known[lo:hi].any():
            warnings.warn(
                f"{source}: model {model_id}: 'step' is null on some records, repeated, or "
                "not increasing; Iteration IDs use the run counter instead of the global step",
                RawDataWarning,
                stacklevel=3,
            )
        runs = frame[layout.K_RUN].iloc[lo:hi]
        id_source[model_id] = ID_FROM_RUN
        if runs.is_unique:
            ids[lo:hi], id_known[lo:hi] = runs.to_numpy(dtype="int64", na_value=0), ~np.asarray(runs.isna())
            continue
        repeated = runs[runs.duplicated(keep=False)]
        warnings.warn(
            f"{source}: model {model_id}: the run counter repeats ({repeated.nunique()} value(s), e.g. run {repeated.iloc[0]} "
            f"{int((runs == repeated.iloc[0]).sum())} times: two sessions of one graph, or crafted data); Iteration IDs "
            f"number the {hi - lo} records 1..{hi - lo} in order of their iteration end instead",
            RawDataWarning,
            stacklevel=3,
        )
        ids[lo:hi], id_known[lo:hi] = np.arange(1, hi - lo + 1), True
    frame[ITERATION_ID] = pd.arrays.IntegerArray(ids, ~id_known)
    return frame, id_source


def read_info(device_dir: Path | str) -> RunInfo:
    """Read ``info.json`` of a device folder; an info with nothing known (and a warning) if absent or unreadable."""
    return RunInfo.from_json(read_json_object(Path(device_dir) / layout.INFO_FILE, "reporting without it"))


def device_id_of(device_dir: Path | str, info: RunInfo) -> int:
    """The device id: from the ``device_<id>`` folder name, else info.json's ``device_id``, else 0.

    The folder name wins because it is what the runtime used to keep ranks
    apart on disk; info.json is only consulted for oddly named folders.
    """
    suffix = Path(device_dir).name[len(layout.DEVICE_DIR_PREFIX):]
    if Path(device_dir).name.startswith(layout.DEVICE_DIR_PREFIX) and suffix.isdigit():
        return int(suffix)
    return info.device_id if info.device_id is not None else 0


def read_device(device_dir: Path | str) -> DeviceRaw:
    """Read a ``device_<id>`` folder: info.json and, when present, its training trace (either format)."""
    device_dir = Path(device_dir)
    info = read_info(device_dir)
    paths = layout.training_trace_files(device_dir)
    trace = read_training_traces(paths) if paths else None
    return DeviceRaw(device_id=device_id_of(device_dir, info), device_dir=device_dir, info=info, trace=trace)
