"""step_trace JSON timeline: valid Chrome trace, names, tracks, and the validator itself."""
from __future__ import annotations

import json
from collections import defaultdict

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from npu_tf_profiling.reports.encoders.chrome_trace import assign_lanes, lanes_of, validate_chrome_trace
from npu_tf_profiling.reports.errors import RawDataWarning
from npu_tf_profiling.reports.writer import write_step_trace_reports
from tests.helpers.raw_fixtures import T0, Phases, iterations, make_prof_dir, record


def _timeline(tmp_path, devices):
    prof = make_prof_dir(tmp_path, devices)
    _, json_path = write_step_trace_reports(prof)
    events = json.loads(json_path.read_text())
    assert isinstance(events, list)  # msprof's array form
    return events


def _thread_names(events):
    return {(e["pid"], e["tid"]): e["args"]["name"] for e in events if e["ph"] == "M" and e["name"] == "thread_name"}


def _spans(events):
    return [e for e in events if e["ph"] == "X"]


def test_timeline_validates_and_has_every_event_kind(tmp_path):
    events = _timeline(tmp_path, {0: iterations(3, phases=Phases(reduces=[(100, 50), (400, 60)]))})
    assert validate_chrome_trace(events) == []
    names = {e["name"] for e in _spans(events)}
    for i in (1, 2, 3):
        assert {f"Iteration {i}", f"FP_BP Time {i}", f"Iteration Refresh {i}", f"Reduce_{i}_1", f"Reduce_{i}_2"} <= names
    assert {"Data_aug Bound 2", "Data_aug Bound 3", "GetNext"} <= names
    assert "Data_aug Bound 1" not in names  # N/A on the first iteration
    procs = [e for e in events if e["name"] == "process_name"]
    assert procs == [{"name": "process_name", "ph": "M", "pid": 0, "tid": 0, "args": {"name": "Device 0"}}]


def test_span_values_and_args_match_the_definitions(tmp_path):
    events = _timeline(tmp_path, {0: iterations(2, phases=Phases(reduces=[(100, 50)]))})
    by_name = {e["name"]: e for e in _spans(events) if e["name"] != "GetNext"}
    base = int(T0)
    it2 = by_name["Iteration 2"]
    assert (it2["ts"], it2["dur"]) == (base + 1000, 1000)
    assert it2["args"] == {
        "Iteration ID": 2,
        "FP Start": base + 1100,
        "BP End": base + 1800,
        "Iteration End": base + 2000,
        "Iteration Time(us)": 1000,
    }
    it1 = by_name["Iteration 1"]
    assert (it1["ts"], it1["dur"]) == (base + 100, 900)  # first: from FP Start
    fpbp = by_name["FP_BP Time 2"]
    assert (fpbp["ts"], fpbp["dur"], fpbp["args"]["FP_BP Time(us)"]) == (base + 1100, 700, 700)
    refresh = by_name["Iteration Refresh 2"]
    assert (refresh["ts"], refresh["dur"]) == (base + 1800, 200)
    assert refresh["args"] == {"BP End": base + 1800, "Iteration End": base + 2000, "Iteration Refresh(us)": 200}
    aug = by_name["Data_aug Bound 2"]
    assert (aug["ts"], aug["dur"], aug["args"]) == (base + 1000, 100, {"Data_aug Bound(us)": 100})
    red = by_name["Reduce_2_1"]
    assert red["args"] == {"Reduce Start 1": base + 1200, "Reduce End 1": base + 1250}
    getnext = [e for e in _spans(events) if e["name"] == "GetNext"]
    assert getnext[1]["args"] == {
        "Iteration ID": 2,
        "GetNext Start": base + 1050,
        "GetNext End": base + 1090,
        "GetNext Time(us)": 40,
    }
    assert all(isinstance(e["ts"], int) and isinstance(e["dur"], int) for e in _spans(events))


def test_threads_are_named_per_model_and_overlapping_kinds_are_apart(tmp_path):
    a = iterations(3, model_id=1, phases=Phases(reduces=[(100, 50)]))
    b = iterations(3, model_id=2, start=T0 + 300)
    events = _timeline(tmp_path, {0: a + b})
    names = _thread_names(events)
    assert set(names.values()) >= {
        "Step Trace(Model ID:1)",
        "Step Trace(Model ID:1) Phases",
        "Step Trace(Model ID:1) GetNext",
        "Step Trace(Model ID:1) Reduce",
        "Step Trace(Model ID:2)",
        "Step Trace(Model ID:2) Phases",
    }
    tracks = defaultdict(set)
    for e in _spans(events):
        tracks[names[(e["pid"], e["tid"])]].add(e["name"].split(" ")[0].split("_")[0])
    assert tracks["Step Trace(Model ID:1)"] == {"Iteration"}
    assert tracks["Step Trace(Model ID:1) Phases"] == {"Data", "FP", "Iteration"}  # Data_aug, FP_BP, Iteration Refresh
    assert tracks["Step Trace(Model ID:1) Reduce"] == {"Reduce"}
    assert validate_chrome_trace(events) == []


def test_getnext_skipped_when_either_end_is_missing(tmp_path):
    recs = [
        record(run=1, get_next=[[T0 + 1, None]], fp_start=T0 + 10, bp_end=T0 + 20, iteration_end=T0 + 30),
        record(run=2, get_next=[[None, T0 + 35]], fp_start=T0 + 40, bp_end=T0 + 50, iteration_end=T0 + 60),
        record(run=3, get_next=[[T0 + 62, T0 + 65]], fp_start=T0 + 70, bp_end=T0 + 80, iteration_end=T0 + 90),
    ]
    events = _timeline(tmp_path, {0: recs})
    getnext = [e for e in _spans(events) if e["name"] == "GetNext"]
    assert [e["args"]["Iteration ID"] for e in getnext] == [3]


def test_overlapping_reduce_groups_get_extra_lanes(tmp_path):
    events = _timeline(tmp_path, {0: iterations(2, phases=Phases(reduces=[(100, 300), (150, 300), (200, 10)]))})
    assert validate_chrome_trace(events) == []
    names = _thread_names(events)
    assert {"Step Trace(Model ID:1) Reduce #2", "Step Trace(Model ID:1) Reduce #3"} <= set(names.values())


def test_negative_durations_are_left_out_with_a_warning(tmp_path):
    recs = iterations(3)
    recs[1]["bp_end"] = recs[1]["fp_start"] - 50  # broken clock
    prof = make_prof_dir(tmp_path, {0: recs})
    with pytest.warns(RawDataWarning, match="negative duration"):
        _, json_path = write_step_trace_reports(prof)
    events = json.loads(json_path.read_text())
    assert validate_chrome_trace(events) == []
    names = {e["name"] for e in _spans(events)}
    assert "FP_BP Time 2" not in names and "FP_BP Time 3" in names


def test_two_devices_are_two_processes(tmp_path):
    events = _timeline(tmp_path, {0: iterations(2), 3: iterations(2)})
    procs = {e["pid"]: e["args"]["name"] for e in events if e.get("name") == "process_name"}
    assert procs == {0: "Device 0", 3: "Device 3"}
    assert {e["pid"] for e in _spans(events)} == {0, 3}
    assert validate_chrome_trace(events) == []


# ----- the validator catches what it claims to ---------------------------------------


def _named(pid=1, tid=1):
    return {"name": "thread_name", "ph": "M", "pid": pid, "tid": tid, "args": {"name": "t"}}


def _x(ts, dur, name="a", pid=1, tid=1):
    return {"name": name, "ph": "X", "ts": ts, "dur": dur, "pid": pid, "tid": tid}


def test_validator_accepts_touching_spans_and_object_form():
    events = [_named(), _x(0, 10), _x(10, 5)]
    assert validate_chrome_trace(events) == []
    assert validate_chrome_trace({"traceEvents": events}) == []


@pytest.mark.parametrize(
    "events, fragment",
    [
        ([_named(), _x(0, 10), _x(5, 10, "b")], "overlaps"),
        ([_named(), _x(0, 100), _x(10, 5, "b"), _x(50, 5, "c")], "'c' at 50 overlaps"),  # nested, later one too
        ([_named(), {"name": "a", "ph": "X", "ts": 1, "pid": 1, "tid": 1}], "without a finite 'dur'"),
        ([_named(), _x(0, -1)], "negative"),
        ([_named(), {"name": "a", "ph": "X", "dur": 1, "pid": 1, "tid": 1}], "'ts'"),
        ([_named(), {"ph": "X", "ts": 0, "dur": 1, "pid": 1, "tid": 1}], "missing 'name'"),
        ([_named(), {"name": "a", "ph": "X", "ts": 0, "dur": 1, "pid": 1}], "missing 'tid'"),
        ([{"name": "a", "ts": 0}], "missing 'ph'"),
        ([_x(0, 1)], "without a thread_name"),
        ([{"name": "bogus", "ph": "M", "pid": 1, "args": {}}], "unknown metadata"),
        ([_named(), dict(_x(0, 1), args=[1])], "'args' is not an object"),
        ([_named(), _x(0, float("nan"))], "finite"),
        ({"events": []}, "traceEvents"),
    ],
)
def test_validator_reports_problems(events, fragment):
    problems = validate_chrome_trace(events)
    assert any(fragment in p for p in problems), problems


def test_validator_allows_same_times_on_different_tracks():
    events = [_named(1, 1), _named(1, 2), _x(0, 10, tid=1), _x(0, 10, tid=2)]
    assert validate_chrome_trace(events) == []


def test_assign_lanes_is_minimal_and_reuses_free_lanes():
    spans = [(0, 10), (5, 10), (10, 2), (15, 1), (12, 10)]
    lanes = assign_lanes(spans)
    assert lanes == [0, 1, 0, 1, 0]
    for lane in set(lanes):
        mine = sorted(s for s, span_lane in zip(spans, lanes) if span_lane == lane)
        assert all(a[0] + a[1] <= b[0] for a, b in zip(mine, mine[1:]))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 60), st.integers(0, 12)), max_size=40))
def test_lanes_of_columns_equal_the_greedy_loop(spans):
    """Runs of overlapping spans laid out on their own give assign_lanes' lanes exactly (ties, touches, zero lengths)."""
    ts = np.array([s[0] for s in spans], dtype="float64")
    dur = np.array([s[1] for s in spans], dtype="float64")
    found = lanes_of(ts, dur)
    assert (found.tolist() if found is not None else [0] * len(spans)) == assign_lanes(spans)
    assert found is None or found.any()  # None exactly when every span is in lane 0
