"""training_trace.bin: binary frames round-trip, read like the JSON lines, and survive tearing and garbage."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from npu_tf_profiling.raw_format import layout
from npu_tf_profiling.raw_format.errors import RawDataWarning
from npu_tf_profiling.raw_format.training_frame import NO_STEP, DamagedBytes, Frame, RecordShape, decode_frames, encode_frame
from npu_tf_profiling.reports.step import records as raw
from tests.helpers.raw_fixtures import T0, iterations, jsonl, make_prof_dir


def _rows(shape: RecordShape, n: int, first_run: int = 1, base: float = T0) -> np.ndarray:
    rows = np.zeros(n, dtype=shape.dtype)
    rows["run"] = np.arange(first_run, first_run + n)
    rows["step"] = rows["run"] + 10 if shape.has_step else NO_STEP
    rows["times"] = base + np.arange(n)[:, None] * 1000.0 + np.arange(shape.times)[None, :] * 10.0
    return rows


@settings(max_examples=60, deadline=None)
@given(get_next=st.integers(0, 3), fp=st.booleans(), bp=st.booleans(), reduce=st.integers(0, 3), step=st.booleans(),
       n=st.integers(1, 50), model=st.integers(1, 2**31))
def test_frames_round_trip(get_next, fp, bp, reduce, step, n, model) -> None:
    shape = RecordShape(get_next, fp, bp, reduce, step)
    rows = _rows(shape, n)
    data = encode_frame(model, shape, rows) + encode_frame(model, shape, rows[:1])
    frames = list(decode_frames(data))
    assert [type(f) for f in frames] == [Frame, Frame]
    assert frames[0].model_id == model and frames[0].shape == shape and frames[1].first_record == n + 1
    np.testing.assert_array_equal(frames[0].rows, rows)


def _equivalent_files(tmp_path, records: list[dict]) -> tuple:
    """The same records as JSON lines and as one binary frame."""
    shape = RecordShape(len(records[0]["get_next"]), True, True, len(records[0]["reduce"]), records[0]["step"] is not None)
    rows = np.zeros(len(records), dtype=shape.dtype)
    for i, rec in enumerate(records):
        pairs = [t for pair in rec["get_next"] for t in pair]
        reduces = [t for pair in rec["reduce"] for t in pair]
        rows[i] = (rec["run"], NO_STEP if rec["step"] is None else rec["step"], pairs + [rec["fp_start"], rec["bp_end"]] + reduces + [rec["iteration_end"]])
    prof = make_prof_dir(tmp_path / "json", {0: jsonl(records)})
    binary = layout.training_frames_path(make_prof_dir(tmp_path / "bin", {0: None}), 0)
    binary.parent.mkdir(parents=True, exist_ok=True)
    binary.write_bytes(encode_frame(1, shape, rows))
    return layout.training_trace_path(prof, 0), binary


@pytest.mark.parametrize("with_step", [False, True])
def test_binary_reads_exactly_like_json_lines(tmp_path, with_step) -> None:
    records = iterations(20, with_step=with_step)
    text_path, binary_path = _equivalent_files(tmp_path, records)
    from_text = raw.read_training_trace(text_path).frame
    from_binary = raw.read_training_trace(binary_path).frame
    assert from_binary.drop(columns="line").equals(from_text.drop(columns="line"))


def test_torn_last_frame_keeps_its_whole_records_and_says_so(tmp_path) -> None:
    shape = RecordShape(1, True, True, 0, True)
    data = encode_frame(1, shape, _rows(shape, 3)) + encode_frame(1, shape, _rows(shape, 4, first_run=4, base=T0 + 1e6))
    path = tmp_path / "training_trace.bin"
    path.write_bytes(data[: len(data) - shape.dtype.itemsize - 5])  # killed in the middle of the 6th record
    with pytest.warns(RawDataWarning, match=r"record 6: incomplete last frame: 2 of its 4 record\(s\) missing"):
        read = raw.read_training_trace(path)
    assert read.frame["run"].tolist() == [1, 2, 3, 4, 5]
    assert [s.line for s in read.skipped] == [6]


def test_garbage_between_frames_is_skipped_and_reading_resumes(tmp_path) -> None:
    shape = RecordShape(0, True, True, 0, False)
    data = encode_frame(1, shape, _rows(shape, 2)) + b"\x00garbage\xff" + encode_frame(1, shape, _rows(shape, 2, first_run=3, base=T0 + 1e6))
    items = list(decode_frames(data))
    assert [type(i) for i in items] == [Frame, DamagedBytes, Frame]
    assert "byte(s) without a frame marker" in items[1].reason
    path = tmp_path / "training_trace.bin"
    path.write_bytes(data)
    with pytest.warns(RawDataWarning, match="skipped 1 unreadable record"):
        assert raw.read_training_trace(path).frame["run"].tolist() == [1, 2, 3, 4]


def test_a_damaged_count_never_swallows_the_next_frame() -> None:
    shape = RecordShape(0, False, False, 0, False)
    first = bytearray(encode_frame(1, shape, _rows(shape, 2)))
    first[8:12] = (10**6).to_bytes(4, "little")  # the row count, damaged
    items = list(decode_frames(bytes(first) + encode_frame(1, shape, _rows(shape, 1, first_run=3))))
    assert [type(i) for i in items] == [Frame, DamagedBytes, Frame]
    assert items[2].rows["run"].tolist() == [3]


def test_record_without_an_iteration_end_is_skipped_like_a_bad_line(tmp_path) -> None:
    shape = RecordShape(0, True, True, 0, False)
    rows = _rows(shape, 3)
    rows["times"][1, -1] = np.nan
    path = tmp_path / "training_trace.bin"
    path.write_bytes(encode_frame(1, shape, rows))
    with pytest.warns(RawDataWarning, match="record 2"):
        assert raw.read_training_trace(path).frame["run"].tolist() == [1, 3]


def test_a_frame_damaged_in_place_is_left_out_and_reported(tmp_path) -> None:
    shape = RecordShape(0, True, True, 0, False)
    first, second = encode_frame(1, shape, _rows(shape, 3)), encode_frame(1, shape, _rows(shape, 2, first_run=4, base=T0 + 1e6))
    damaged = bytearray(first)
    damaged[-3] ^= 0xFF  # a bit flip in a time of the third record: no syntax shows it, the checksum does
    path = tmp_path / "training_trace.bin"
    path.write_bytes(bytes(damaged) + second)
    with pytest.warns(RawDataWarning, match=r"record 1: frame damaged \(checksum mismatch\): its 3 record\(s\) left out"):
        assert raw.read_training_trace(path).frame["run"].tolist() == [4, 5]
