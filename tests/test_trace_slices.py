"""trace_slices: one file under the slice size, CANN-named slices above it, each a valid trace, no event lost."""
from __future__ import annotations

import json

import pytest

from npu_tf_profiling.reports.encoders import chrome_trace
from npu_tf_profiling.reports.encoders.chrome_trace import validate_chrome_trace
from npu_tf_profiling.reports.encoders.trace_slices import MIN_SLICE_BYTES, encode_event, existing_slices, plan_slices, write_trace

TS = "20240102030405"
META = [chrome_trace.process_name_event(0, "Device 0"), chrome_trace.thread_name_event(0, 1, "Iterations"),
        chrome_trace.thread_name_event(0, 2, "Phases")]


def _iteration(i: int) -> dict:
    return {"name": f"Iteration {i}", "ph": "X", "ts": 1000 * i, "dur": 1000, "pid": 0, "tid": 1, "args": {"Iteration ID": i}}


def _phases(i: int) -> list[dict]:
    # two spans per row, and none on every 7th row (a row may have no event of a kind)
    if i % 7 == 0:
        return []
    return [{"name": f"FP_BP {i}", "ph": "X", "ts": 1000 * i, "dur": 600, "pid": 0, "tid": 2, "args": {}},
            {"name": f"Refresh {i}", "ph": "X", "ts": 1000 * i + 600, "dur": 400, "pid": 0, "tid": 2, "args": {"é": "ü"}}]


def _sections():
    return [lambda lo, hi: [encode_event(_iteration(i)) for i in range(lo, hi)],
            lambda lo, hi: [",".join(encode_event(e) for e in _phases(i)) for i in range(lo, hi)]]


def _all_events(rows: int) -> list[dict]:
    return [_iteration(i) for i in range(rows)] + [e for i in range(rows) for e in _phases(i)]


def test_small_trace_is_one_file_equal_to_dumps_events(tmp_path):
    paths = write_trace(tmp_path, f"trace_{TS}.json", "trace", TS, META, _sections(), 50, chunk_rows=8)
    assert paths == [tmp_path / f"trace_{TS}.json"]
    assert paths[0].read_bytes() == chrome_trace.dumps_events(META + _all_events(50)).encode("utf-8")


def test_empty_sections_and_no_metadata_still_give_valid_json(tmp_path):
    (path,) = write_trace(tmp_path, "t.json", "t", TS, [], _sections(), 0)
    assert path.read_text() == "[]\n"
    (path,) = write_trace(tmp_path, "t.json", "t", TS, [], _sections(), 3)
    assert json.loads(path.read_text()) == _all_events(3)


def test_big_trace_is_sliced_at_row_boundaries_every_slice_valid_no_event_lost(tmp_path):
    rows = 3000
    stale = tmp_path / f"trace_{TS}.json"
    stale.write_text("[]\n")  # a previous, unsliced report of the same name
    paths = write_trace(tmp_path, f"trace_{TS}.json", "trace", TS, META, _sections(), rows,
                        slice_bytes=MIN_SLICE_BYTES, chunk_rows=100)
    assert len(paths) > 3
    assert [p.name for p in paths] == [f"trace_slice_{n}_{TS}.json" for n in range(len(paths))]
    assert not stale.exists()
    seen: list[dict] = []
    previous_last_row = -1
    for path in paths:
        assert path.stat().st_size <= MIN_SLICE_BYTES
        events = json.loads(path.read_text(encoding="utf-8"))
        assert validate_chrome_trace(events) == []
        assert events[:len(META)] == META  # each slice names its tracks
        spans = events[len(META):]
        rows_here = sorted({int(e["name"].split()[-1]) for e in spans})
        # a slice holds whole rows: every event of each of its rows, and rows follow on from the previous slice
        assert rows_here[0] == previous_last_row + 1 and rows_here == list(range(rows_here[0], rows_here[-1] + 1))
        assert spans == [_iteration(i) for i in rows_here] + [e for i in rows_here for e in _phases(i)]
        previous_last_row = rows_here[-1]
        seen.extend(spans)
    assert previous_last_row == rows - 1
    assert sorted(json.dumps(e) for e in seen) == sorted(json.dumps(e) for e in _all_events(rows))


def test_rewriting_smaller_removes_the_old_slices(tmp_path):
    sliced = write_trace(tmp_path, f"trace_{TS}.json", "trace", TS, META, _sections(), 2000, slice_bytes=MIN_SLICE_BYTES)
    assert len(sliced) > 1 and existing_slices(tmp_path, "trace", TS) == sliced
    (whole,) = write_trace(tmp_path, f"trace_{TS}.json", "trace", TS, META, _sections(), 10, slice_bytes=MIN_SLICE_BYTES)
    assert existing_slices(tmp_path, "trace", TS) == [] and whole.is_file()
    assert sorted(p.name for p in tmp_path.iterdir()) == [whole.name]  # no temporary files left either


def test_plan_slices_fits_the_room_and_gives_an_oversized_row_its_own_slice():
    import numpy as np

    assert plan_slices(np.array([40, 40, 40, 40]), 10, 100) == [(0, 2), (2, 4)]
    assert plan_slices(np.array([10, 500, 10]), 10, 100) == [(0, 1), (1, 2), (2, 3)]
    assert plan_slices(np.array([], dtype=np.int64), 10, 100) == [(0, 0)]


def test_too_small_a_slice_size_is_refused(tmp_path):
    with pytest.raises(ValueError, match="too small"):
        write_trace(tmp_path, "t.json", "t", TS, META, _sections(), 3, slice_bytes=1000)
