"""step_trace CSV: header order, formulas, N/A rules, Iteration IDs, Reduce pairs, GetNext."""
from __future__ import annotations

import warnings

import pytest

from npu_tf_profiling.reports.step import table as st
from npu_tf_profiling.reports.errors import RawDataWarning
from npu_tf_profiling.reports.writer import write_step_trace_reports
from tests.helpers.raw_fixtures import (
    NA,
    PROF_TS,
    T0,
    Phases,
    assert_step_trace_formulas,
    iterations,
    make_prof_dir,
    read_csv,
    record,
)

HEADER = (
    "Device_id,Iteration ID,FP Start(us),BP End(us),Iteration End(us),Iteration Time(us),"
    "FP to BP Time(us),Iteration Refresh(us),Data Aug Bound(us),Model ID"
)
GETNEXT = "GetNext Start(us),GetNext End(us),GetNext Time(us)"


def _report(tmp_path, devices, **kw):
    prof = make_prof_dir(tmp_path, devices, **kw)
    csv_path, json_path = write_step_trace_reports(prof)
    header, rows = read_csv(csv_path)
    return csv_path, header, rows


def test_header_order_and_single_device_has_no_reduce_columns(tmp_path):
    csv_path, header, rows = _report(tmp_path, {0: iterations(3)})
    first_line = csv_path.read_text().splitlines()[0]
    assert first_line == HEADER + "," + GETNEXT
    assert csv_path.name == f"step_trace_{PROF_TS}.csv"
    assert csv_path.parent.name == "mindstudio_profiler_output"
    assert len(rows) == 3


def test_each_formula_row_by_row_with_known_numbers(tmp_path):
    # data_aug 100, fp_bp 700, refresh 200, get_next 40 ending 10 before fp.
    _, header, rows = _report(tmp_path, {3: iterations(3, start=T0)})
    assert_step_trace_formulas(header, rows)
    base = int(T0)
    expected = [
        # dev, id, fp, bp, end, it_time, fp_bp, refresh, aug, model, gn_start, gn_end, gn_time
        [3, 1, base + 100, base + 800, base + 1000, 900, 700, 200, NA, 1, base + 50, base + 90, 40],
        [3, 2, base + 1100, base + 1800, base + 2000, 1000, 700, 200, 100, 1, base + 1050, base + 1090, 40],
        [3, 3, base + 2100, base + 2800, base + 3000, 1000, 700, 200, 100, 1, base + 2050, base + 2090, 40],
    ]
    assert rows == [[str(c) for c in row] for row in expected]


def test_times_are_rounded_first_so_formulas_hold_on_written_digits(tmp_path):
    recs = [
        record(run=1, fp_start=T0 + 0.5, bp_end=T0 + 10.25, iteration_end=T0 + 20.5),
        record(run=2, fp_start=T0 + 30.25, bp_end=T0 + 40.75, iteration_end=T0 + 50.5),
    ]
    _, header, rows = _report(tmp_path, {0: recs})
    assert_step_trace_formulas(header, rows)
    fp, bp, end = (int(c) - int(T0) for c in rows[0][2:5])
    assert (fp, bp, end) == (1, 10, 21)  # half up; 10.25 -> 10 (floats resolve 0.25 us here)
    assert rows[0][6] == "9"  # FP to BP from the rounded values, not round(9.75)=10
    assert rows[1][8] == str(30 - 21)  # Data Aug Bound = 30 (30.25) - 21 (20.5)


def test_missing_fp_bp_is_na_and_first_iteration_time_na(tmp_path):
    recs = [record(run=i, fp_start=None, bp_end=None, iteration_end=T0 + 1000 * i) for i in (1, 2, 3)]
    _, header, rows = _report(tmp_path, {0: recs})
    assert_step_trace_formulas(header, rows)
    for row in rows:
        assert row[2] == row[3] == NA  # FP Start, BP End
        assert row[6] == row[7] == row[8] == NA  # FP to BP, Refresh, Data Aug Bound
    assert rows[0][5] == NA  # first Iteration Time needs FP Start
    assert rows[1][5] == rows[2][5] == "1000"  # later ones use the previous end


def test_only_first_row_has_na_data_aug_bound(tmp_path):
    _, _, rows = _report(tmp_path, {0: iterations(6)})
    assert [r[8] == NA for r in rows] == [True] + [False] * 5


def test_reduce_pairs_padded_with_na_to_the_largest_group_count(tmp_path):
    recs = iterations(3, phases=Phases(reduces=[(100, 50), (300, 60), (500, 70)]))
    recs[1]["reduce"] = recs[1]["reduce"][:1]  # only one group on iteration 2
    recs[2]["reduce"] = []
    _, header, rows = _report(tmp_path, {0: recs})
    assert header[10:16] == ["Reduce Start(us)", "Reduce Duration(us)"] * 3
    assert header[16:] == GETNEXT.split(",")
    assert rows[0][11] == "50" and rows[0][13] == "60" and rows[0][15] == "70"
    assert rows[0][10] == str(int(T0) + 100 + 100)  # fp (T0+100) + offset 100
    assert rows[1][10:12] == [str(int(T0) + 1100 + 100), "50"]
    assert rows[1][12:16] == [NA] * 4
    assert rows[2][10:16] == [NA] * 6
    assert_step_trace_formulas(header, rows)


def test_reduce_columns_span_devices_in_one_csv(tmp_path):
    devices = {
        0: iterations(2, phases=Phases(reduces=[(10, 5), (20, 5)])),
        1: iterations(2),
    }
    _, header, rows = _report(tmp_path, devices)
    assert header.count("Reduce Start(us)") == 2
    assert [r[0] for r in rows] == ["0", "0", "1", "1"]
    assert rows[2][10:14] == [NA] * 4


def test_two_models_interleaved_count_ids_per_model(tmp_path):
    a = iterations(4, model_id=1, start=T0)
    b = iterations(3, model_id=2, start=T0 + 500)
    interleaved = [a[0], b[0], a[1], b[1], a[2], b[2], a[3]]
    _, header, rows = _report(tmp_path, {0: interleaved})
    assert_step_trace_formulas(header, rows)
    by_model = {}
    for row in rows:
        by_model.setdefault(row[9], []).append(int(row[1]))
    assert by_model == {"1": [1, 2, 3, 4], "2": [1, 2, 3]}
    # Data Aug Bound uses the previous end of the *same* model (100), not the other model's.
    assert [r[8] for r in rows if r[9] == "2"] == [NA, "100", "100"]


def test_records_out_of_order_in_file_are_sorted_by_iteration_end(tmp_path):
    recs = iterations(4)
    _, header, rows = _report(tmp_path, {0: [recs[2], recs[0], recs[3], recs[1]]})
    assert [r[1] for r in rows] == ["1", "2", "3", "4"]
    assert_step_trace_formulas(header, rows)


def test_step_based_ids_when_every_record_has_a_step(tmp_path):
    _, header, rows = _report(tmp_path, {0: iterations(3, with_step=True, step0=100)})
    assert [r[1] for r in rows] == ["101", "102", "103"]
    assert rows[1][8] == "100"  # contiguous steps: previous iteration is known
    assert_step_trace_formulas(header, rows)


def test_unusable_steps_fall_back_to_run_with_a_warning(tmp_path):
    recs = iterations(3, with_step=True)
    recs[1]["step"] = None
    with pytest.warns(RawDataWarning, match="run counter"):
        _, _, rows = _report(tmp_path, {0: recs})
    assert [r[1] for r in rows] == ["1", "2", "3"]


def test_repeated_steps_fall_back_to_run(tmp_path):
    recs = iterations(3, with_step=True)
    for r in recs:
        r["step"] = 7  # e.g. a graph that reads but never increments the global step
    with pytest.warns(RawDataWarning):
        _, _, rows = _report(tmp_path, {0: recs})
    assert [r[1] for r in rows] == ["1", "2", "3"]


def test_a_hole_in_ids_makes_the_next_iteration_like_a_first_one(tmp_path):
    recs = iterations(4)
    del recs[1]  # run 2 lost
    _, header, rows = _report(tmp_path, {0: recs})
    assert [r[1] for r in rows] == ["1", "3", "4"]
    assert rows[1][8] == NA  # no Data Aug Bound across the hole
    assert rows[1][5] == "900"  # End - FP Start, not End - end of run 1
    assert rows[2][5] == "1000"
    assert_step_trace_formulas(header, rows)


def test_getnext_min_start_max_end_and_na_when_an_end_is_missing(tmp_path):
    recs = [
        record(run=1, get_next=[[T0 + 10, T0 + 30], [T0 + 5, T0 + 20]], fp_start=T0 + 40, bp_end=T0 + 50, iteration_end=T0 + 60),
        record(run=2, get_next=[[T0 + 70, None]], fp_start=T0 + 80, bp_end=T0 + 90, iteration_end=T0 + 100),
        record(run=3, get_next=[], fp_start=T0 + 110, bp_end=T0 + 120, iteration_end=T0 + 130),
    ]
    _, header, rows = _report(tmp_path, {0: recs})
    base = int(T0)
    assert rows[0][-3:] == [str(base + 5), str(base + 30), "25"]
    assert rows[1][-3:] == [str(base + 70), NA, NA]
    assert rows[2][-3:] == [NA, NA, NA]
    assert_step_trace_formulas(header, rows)


def test_compute_step_trace_frame_is_numeric_and_csv_header_helper(tmp_path):
    from npu_tf_profiling.reports.step.records import read_training_trace

    prof = make_prof_dir(tmp_path, {0: iterations(3, phases=Phases(reduces=[(1, 2)]))})
    trace = read_training_trace(prof / "device_0" / "data" / "training_trace.jsonl")
    table = st.compute_step_trace(trace.frame, device_id=0)
    assert table.n_reduce == 1
    assert list(table.csv_frame().columns) == st.csv_header(1)
    assert table.frame[st.FP_TO_BP].tolist() == [700, 700, 700]
    assert table.reduce_duration(0).tolist() == [2, 2, 2]
    assert table.has_previous.tolist() == [False, True, True]
    assert st.reduce_positions(0) == (10, 11)


def test_regenerating_overwrites_the_same_files(tmp_path):
    prof = make_prof_dir(tmp_path, {0: iterations(2)})
    first = write_step_trace_reports(prof)
    (prof / "device_0" / "data" / "training_trace.jsonl").write_text(
        "".join(__import__("json").dumps(r) + "\n" for r in iterations(5))
    )
    second = write_step_trace_reports(prof)
    assert first == second
    assert sorted(p.name for p in first[0].parent.iterdir()) == sorted(p.name for p in first)  # no temp files left
    assert len(read_csv(second[0])[1]) == 5


def test_explicit_timestamp_is_validated(tmp_path):
    from npu_tf_profiling.reports.errors import BadInputError

    prof = make_prof_dir(tmp_path, {0: iterations(1)})
    paths = write_step_trace_reports(prof, timestamp="20250101000000")
    assert [p.name for p in paths] == ["step_trace_20250101000000.csv", "step_trace_20250101000000.json"]
    with pytest.raises(BadInputError):
        write_step_trace_reports(prof, timestamp="2025-01-01")


def test_no_warning_on_clean_data(tmp_path):
    prof = make_prof_dir(tmp_path, {0: iterations(3, with_step=True)})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        write_step_trace_reports(prof)
