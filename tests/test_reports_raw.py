"""Raw reader: torn/corrupt lines are skipped loudly, ids follow the step/run rule."""
from __future__ import annotations

import json

import pytest

from npu_tf_profiling.raw_format import layout
from npu_tf_profiling.raw_format.run_info import RunInfo
from npu_tf_profiling.raw_format.training_record import parse_record
from npu_tf_profiling.reports.step import records as raw
from npu_tf_profiling.reports.errors import RawDataWarning
from npu_tf_profiling.reports.writer import write_step_trace_reports
from tests.helpers.raw_fixtures import assert_step_trace_formulas, iterations, jsonl, make_prof_dir, read_csv


def _trace_path(prof):
    return layout.training_trace_path(prof, 0)


def test_torn_last_line_is_skipped_with_file_and_line_in_the_warning(tmp_path):
    recs = iterations(5)
    text = jsonl(recs) + json.dumps(iterations(6)[5])[:37]  # killed mid-write
    prof = make_prof_dir(tmp_path, {0: text})
    with pytest.warns(RawDataWarning) as caught:
        read = raw.read_training_trace(_trace_path(prof))
    assert read.skipped_count == 1
    assert read.skipped[0].line == 6
    assert "incomplete last line" in read.skipped[0].reason
    message = str(caught[0].message)
    assert str(_trace_path(prof)) in message and "line 6" in message
    assert read.frame["run"].tolist() == [1, 2, 3, 4, 5]


def test_torn_last_line_report_keeps_every_complete_iteration(tmp_path):
    text = jsonl(iterations(40)) + '{"model_id": 1, "run": 41, "step": null, "get_n'
    prof = make_prof_dir(tmp_path, {0: text})
    with pytest.warns(RawDataWarning, match="line 41"):
        csv_path, _ = write_step_trace_reports(prof)
    header, rows = read_csv(csv_path)
    assert len(rows) == 40
    assert_step_trace_formulas(header, rows)


def test_corrupt_middle_lines_are_skipped_and_all_listed(tmp_path):
    lines = jsonl(iterations(4)).splitlines()
    lines.insert(1, "{not json")
    lines.insert(3, json.dumps({"model_id": "x", "run": 1, "iteration_end": 1.0}))
    lines.insert(4, "\x00\x00\x00")
    lines.insert(5, "")  # blank lines are not records and not errors
    prof = make_prof_dir(tmp_path, {0: "\n".join(lines) + "\n"})
    with pytest.warns(RawDataWarning) as caught:
        read = raw.read_training_trace(_trace_path(prof))
    assert [s.line for s in read.skipped] == [2, 4, 5]
    assert len(read.frame) == 4
    assert "skipped 3" in str(caught[0].message)
    assert "line 2" in str(caught[0].message) and "line 5" in str(caught[0].message)


def test_complete_last_record_without_newline_is_kept(tmp_path):
    text = jsonl(iterations(3)).rstrip("\n")
    prof = make_prof_dir(tmp_path, {0: text})
    read = raw.read_training_trace(_trace_path(prof))
    assert read.skipped_count == 0
    assert len(read.frame) == 3


@pytest.mark.parametrize(
    "bad",
    [
        {"model_id": 1, "run": 1},  # no iteration_end
        {"model_id": 1, "run": 1, "iteration_end": "soon"},
        {"model_id": 1, "iteration_end": 5.0},  # no run
        {"model_id": 1, "run": 1, "iteration_end": 5.0, "reduce": [[1.0]]},
        {"model_id": 1, "run": 1, "iteration_end": 5.0, "get_next": [["a", 2.0]]},
        {"model_id": True, "run": 1, "iteration_end": 5.0},
        [1, 2, 3],
    ],
)
def test_records_breaking_the_contract_are_rejected(bad):
    with pytest.raises(ValueError):
        parse_record(bad)


def test_optional_fields_may_be_absent_or_null():
    row = parse_record({"model_id": 2, "run": 3, "iteration_end": 10.0})
    assert row["fp_start"] is None and row["step"] is None
    assert row["get_next"] == [] and row["reduce"] == []
    row = parse_record({"model_id": 2, "run": 3.0, "iteration_end": 10, "get_next": [[1, None]]})
    assert row["run"] == 3 and row["get_next"] == [(1.0, None)]


def test_ids_from_step_or_run_per_model(tmp_path):
    recs = iterations(3, model_id=1, with_step=True, step0=10) + iterations(2, model_id=2)
    prof = make_prof_dir(tmp_path, {0: recs})
    read = raw.read_training_trace(_trace_path(prof))
    assert read.id_source == {1: raw.ID_FROM_STEP, 2: raw.ID_FROM_RUN}
    assert read.frame[raw.ITERATION_ID].tolist() == [11, 12, 13, 1, 2]


def test_empty_file_gives_empty_frame(tmp_path):
    prof = make_prof_dir(tmp_path, {0: ""})
    read = raw.read_training_trace(_trace_path(prof))
    assert read.frame.empty and read.skipped_count == 0
    assert list(read.frame.columns) == raw.RAW_COLUMNS + [raw.ITERATION_ID]


def test_device_id_from_folder_name_else_info(tmp_path):
    assert raw.device_id_of(tmp_path / "device_7", RunInfo(device_id=3)) == 7
    assert raw.device_id_of(tmp_path / "odd", RunInfo(device_id=3)) == 3
    assert raw.device_id_of(tmp_path / "odd", RunInfo()) == 0


def test_read_device_and_info(tmp_path):
    prof = make_prof_dir(tmp_path, {5: iterations(2), 6: None}, info={"pid": 1, "device_id": 5})
    dev = raw.read_device(prof / "device_5")
    assert dev.device_id == 5 and dev.info.pid == 1 and len(dev.trace.frame) == 2
    assert raw.read_device(prof / "device_6").trace is None


def test_unreadable_info_json_warns_but_does_not_stop(tmp_path):
    prof = make_prof_dir(tmp_path, {0: iterations(2)})
    (prof / "device_0" / "info.json").write_text("{torn")
    with pytest.warns(RawDataWarning, match="info.json"):
        assert raw.read_info(prof / "device_0") == RunInfo.from_json(None)
    with pytest.warns(RawDataWarning):
        paths = write_step_trace_reports(prof)
    assert len(read_csv(paths[0])[1]) == 2
