"""The per-rank arrays behind the cluster rows: interval unions in several windows, and one frame from mixed raw files.

``union_lengths`` sweeps the interval slots in a (k, rows) layout and sorts
each row's intervals only when needed; the reader builds one typed frame from
binary frames of different shapes and a JSON-lines file. Both are held to
numbers the test computes independently (a brute-force count; the records it wrote).
"""
from __future__ import annotations

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as hst

from npu_tf_profiling.raw_format import layout
from npu_tf_profiling.raw_format.training_frame import NO_STEP, RecordShape, encode_frame
from npu_tf_profiling.reports.cluster import step_table as cst
from npu_tf_profiling.reports.step import records as raw
from tests.helpers.raw_fixtures import T0, Phases, iterations, jsonl, make_prof_dir

# An interval: (start, duration); None for a missing start; a negative duration is a reversed interval.
_INTERVAL = hst.tuples(hst.one_of(hst.none(), hst.integers(0, 60)), hst.integers(-10, 30))
_WINDOW = hst.tuples(hst.one_of(hst.none(), hst.integers(-5, 70)), hst.integers(-5, 70))


def _covered(intervals: list[tuple[int | None, int]], lo: int, hi: int) -> int:
    points = set()
    for start, duration in intervals:
        if start is not None:
            points.update(t for t in range(start, start + duration) if lo <= t < hi)
    return len(points)


@settings(max_examples=150, deadline=None)
@given(hst.lists(hst.lists(_INTERVAL, max_size=5), min_size=1, max_size=6), hst.lists(_WINDOW, min_size=1, max_size=3))
def test_union_lengths_of_many_rows_and_windows_match_a_brute_force_count(rows, windows):
    width = max(map(len, rows))
    starts, ends = np.full((len(rows), width), np.nan), np.full((len(rows), width), np.nan)
    for i, intervals in enumerate(rows):
        for k, (start, duration) in enumerate(intervals):
            if start is not None:
                starts[i, k], ends[i, k] = start, start + duration
    bounds = []  # each window moved by the row's number, so that rows differ
    for lo, hi in windows:
        bounds.append((np.array([np.nan if lo is None else float(lo + i) for i in range(len(rows))]),
                       np.array([float(hi + i) for i in range(len(rows))])))
    got = cst.union_lengths(starts, ends, bounds)
    for (los, his), lengths in zip(bounds, got):
        for i, intervals in enumerate(rows):
            if np.isnan(los[i]):
                assert np.isnan(lengths[i])
            else:
                assert lengths[i] == _covered(intervals, int(los[i]), int(his[i])), (intervals, los[i], his[i])


def _frame_rows(shape: RecordShape, runs: range, first_end: float) -> np.ndarray:
    rows = np.zeros(len(runs), dtype=shape.dtype)
    rows["run"] = list(runs)
    rows["step"] = [r + 100 for r in runs] if shape.has_step else NO_STEP
    for i, run in enumerate(runs):
        end = first_end + 1000.0 * i
        pairs = [end - 900.0 + 10 * k for k in range(2 * shape.reduce_pairs)]
        rows["times"][i] = [end - 950.0] * shape.has_fp + [end - 500.0] * shape.has_bp + pairs + [end]
    return rows


def test_frames_of_different_shapes_and_json_lines_make_one_typed_frame(tmp_path):
    narrow, wide = RecordShape(0, True, True, 1, False), RecordShape(0, True, False, 3, True)
    prof = make_prof_dir(tmp_path, {0: jsonl(iterations(2, model_id=5, start=T0 + 1e6, phases=Phases(get_next=None)))})
    frames = [encode_frame(1, narrow, _frame_rows(narrow, range(3, 5), T0 + 3000)),  # model 1's later runs come first
              encode_frame(2, wide, _frame_rows(wide, range(1, 3), T0)),
              encode_frame(1, narrow, _frame_rows(narrow, range(1, 3), T0 + 1000))]
    layout.training_frames_path(prof, 0).write_bytes(b"".join(frames))
    trace = raw.read_device(layout.device_dir(prof, 0)).trace
    frame = trace.frame
    pairs = [raw.pair_column(layout.K_REDUCE, k, end) for k in range(3) for end in ("start", "end")]
    assert list(frame.columns) == raw.RAW_COLUMNS + pairs + [raw.ITERATION_ID]
    assert isinstance(frame.index, pd.RangeIndex) and frame.index.start == 0
    assert [str(t) for t in frame.dtypes] == ["int64", "int64", "Int64", "Int64", "float64", "float64", "float64", "int64",
                                              "int64"] + ["float64"] * 6 + ["Int64"]
    # By model, then iteration end; binary records numbered in file order, JSON lines by line.
    assert frame[layout.K_MODEL_ID].tolist() == [1, 1, 1, 1, 2, 2, 5, 5]
    assert frame["line"].tolist() == [5, 6, 1, 2, 3, 4, 1, 2]
    assert frame[layout.K_RUN].tolist() == [1, 2, 3, 4, 1, 2, 1, 2]
    assert frame[layout.K_STEP].isna().tolist() == [True] * 4 + [False] * 2 + [True] * 2
    assert frame[raw.ITERATION_ID].tolist() == [1, 2, 3, 4, 101, 102, 1, 2]  # steps where every record has one
    assert trace.id_source == {1: raw.ID_FROM_RUN, 2: raw.ID_FROM_STEP, 5: raw.ID_FROM_RUN}
    assert frame[layout.K_REDUCE].tolist() == [1, 1, 1, 1, 3, 3, 0, 0]
    assert frame[layout.K_BP_END].isna().tolist() == [False] * 4 + [True] * 2 + [False] * 2  # the wide shape has no BP End
    # The narrow records have NaN past their one pair; the wide ones all three.
    third = frame[raw.pair_column(layout.K_REDUCE, 2, "end")]
    assert third.isna().tolist() == [True] * 4 + [False] * 2 + [True] * 2
    assert third.iloc[4] == T0 - 900.0 + 50
