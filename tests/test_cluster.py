"""Cluster analysis on synthetic multi-rank raw data (no TensorFlow, fast).

The synthetic ranks follow a synchronous all-reduce (``cluster_synthetic``):
the all-reduce ends when the last rank arrives, so waiting ranks show long
Reduce times, exactly what the real 2- and 3-worker runs in
test_multi_worker.py show.
"""
from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as hst

from npu_tf_profiling.raw_format import layout
from npu_tf_profiling.cli import main
from npu_tf_profiling.reports.cluster import step_table as cst
from npu_tf_profiling.reports.cluster import timeline as ctl
from npu_tf_profiling.reports.cluster import slow_rank as sr
from npu_tf_profiling.reports.encoders.chrome_trace import validate_chrome_trace
from npu_tf_profiling.reports.cluster.analysis import analyze_cluster, write_cluster_analysis
from npu_tf_profiling.reports.cluster.data import find_prof_dirs_below, load_cluster
from npu_tf_profiling.testing.cluster_synthetic import ClusterPlan, write_cluster
from npu_tf_profiling.reports.errors import RawDataWarning

from tests.helpers.no_tensorflow import run_without_tensorflow
OUT = "npu_tf_prof_cluster"


def read_rows(root: Path) -> list[dict[str, str]]:
    with open(root / OUT / cst.CSV_NAME, newline="") as handle:
        return list(csv.DictReader(handle))


def slow_json(root: Path) -> dict:
    return json.loads((root / OUT / sr.JSON_NAME).read_text())


# ------------------------------------------------------------------ the CSV
def test_csv_format_one_row_per_step_and_rank(tmp_path, capsys):
    """msprof-analyze's columns; no stage rows: msprof-analyze writes them only for pipeline-parallel groups."""
    write_cluster(tmp_path, ClusterPlan(ranks=3, steps=10, groups=2))
    assert main(["cluster", str(tmp_path)]) == 0
    with open(tmp_path / OUT / cst.CSV_NAME, newline="") as handle:
        header = next(csv.reader(handle))
    assert header[:12] == [
        "Step", "Type", "Index", "Computing", "Communication(Not Overlapped)", "Overlapped", "Communication", "Free",
        "Stage", "Bubble", "Communication(Not Overlapped and Exclude Receive)", "Preparing",
    ]
    assert header[12:] == ["Data Aug Bound", "Iteration Time", "FP to BP Time", "Reduce", "Model ID"]
    rows = read_rows(tmp_path)
    ranks = [r for r in rows if r["Type"] == "rank"]
    assert len(ranks) == len(rows) == 30
    assert [(r["Step"], r["Index"]) for r in rows[:4]] == [("1", "0"), ("1", "1"), ("1", "2"), ("2", "0")]
    for r in ranks:
        v = {k: (None if x == "N/A" else int(x)) for k, x in r.items() if k not in ("Type", "Index")}
        assert v["Computing"] + v["Communication(Not Overlapped)"] + v["Free"] == v["Iteration Time"] == v["Stage"]
        assert v["Communication"] == v["Overlapped"] + v["Communication(Not Overlapped)"]
        assert v["Bubble"] == 0 and v["Communication(Not Overlapped and Exclude Receive)"] == v["Communication(Not Overlapped)"]
        assert v["Communication"] == v["Reduce"]  # two back-to-back groups: their union is their sum
        if v["Step"] > 1:
            assert v["Free"] == v["Data Aug Bound"]  # no communication before FP Start
            assert 0 <= v["Preparing"] <= v["Data Aug Bound"]
        else:
            assert v["Preparing"] is None and v["Data Aug Bound"] is None
    stages = cst.stage_rows(cst.rank_rows(load_cluster(tmp_path).table))  # the per-step maximum slow_rank uses
    assert len(stages) == 10 and set(stages[cst.INDEX]) == {"(0, 1, 2)"}
    for _, s in stages.iterrows():
        mine = [r for r in ranks if r["Step"] == str(s[cst.STEP])]
        for col in cst.VALUE_COLUMNS:
            values = [int(r[col]) for r in mine if r[col] != "N/A"]
            assert (np.isnan(s[col]) if not values else np.floor(s[col] + 0.5) == max(values)), col
    assert "SLOW RANK" not in capsys.readouterr().out


def test_overlapped_communication_inside_the_backward_pass(tmp_path):
    """Horovod-style reduces that start before BP End count as Overlapped, not as waiting."""
    from tests.helpers.raw_fixtures import T0, make_prof_dir, record

    recs = []
    prev = T0
    for i in range(1, 4):
        fp = prev + 100
        recs.append(record(run=i, step=i, fp_start=fp, bp_end=fp + 1000, iteration_end=fp + 1500,
                           reduce=[[fp + 400, fp + 700], [fp + 600, fp + 1200], [fp + 1300, fp + 1400]]))
        prev = fp + 1500
    make_prof_dir(tmp_path, {0: recs}, pid=1, info={"device_id": 0, "host": "h"})
    make_prof_dir(tmp_path, {1: recs}, pid=2, info={"device_id": 1, "host": "h"})
    rows = cst.rank_rows(load_cluster(tmp_path).table)
    row = rows.iloc[-1]
    assert row[cst.COMMUNICATION] == 800 + 100  # [400, 1200] merged, plus [1300, 1400]
    assert row[cst.OVERLAPPED] == 600  # [400, 1000] inside FP -> BP
    assert row[cst.COMM_NOT_OVERLAPPED] == 300
    assert row[cst.COMPUTING] == 1000 + (500 - 300)
    assert row[cst.FREE] == 100


@settings(max_examples=200, deadline=None)
@given(hst.lists(hst.tuples(hst.integers(0, 100), hst.integers(0, 60)), min_size=0, max_size=6),
       hst.integers(0, 100), hst.integers(0, 100))
def test_union_length_matches_a_brute_force_count(intervals, a, b):
    lo, hi = min(a, b), max(a, b)
    covered = set()
    for s, d in intervals:
        covered.update(t for t in range(s, s + d) if lo <= t < hi)
    starts = np.array([[float(s) for s, _ in intervals]]).reshape(1, -1)
    ends = np.array([[float(s + d) for s, d in intervals]]).reshape(1, -1)
    got = cst.union_length(starts, ends, np.array([float(lo)]), np.array([float(hi)]))
    assert got[0] == len(covered)


def test_union_length_missing_bounds_and_intervals():
    starts = np.array([[np.nan, 5.0], [1.0, 2.0]])
    ends = np.array([[np.nan, 9.0], [3.0, 4.0]])
    got = cst.union_length(starts, ends, np.array([0.0, np.nan]), np.array([10.0, 10.0]))
    assert got[0] == 4.0 and np.isnan(got[1])


# ------------------------------------------------------------------ the tests and the verdict
def test_dixon_q_test_values():
    values = np.array([[10.0, 11.0, 12.0, 30.0], [10.0, 11.0, 12.0, 13.0], [1.0, 2.0, 50.0, np.nan], [1.0, 1.5, 40.0, np.nan]])
    flags = sr.high_outliers(values)
    assert flags[0].tolist() == [False, False, False, True]  # Q = 18/20 = 0.90 > 0.829 (n = 4)
    assert not flags[1].any()  # Q = 1/3
    assert flags[2].tolist() == [False, False, True, False]  # Q = 48/49 = 0.980 > 0.970 (n = 3)
    assert flags[3].tolist() == [False, False, True, False]  # Q = 38.5/39 = 0.987 > 0.970
    assert not sr.high_outliers(np.array([[1.0, 9.0]])).any()  # n = 2: no test


def test_three_sigma_leaves_the_rank_out():
    row = np.array([[100.0, 101, 99, 100, 102, 98, 100, 101, 99, 100, 160]])
    flags = sr.high_outliers(row)
    assert flags[0].tolist() == [False] * 10 + [True]
    # Ten equal values and one higher: infinitely many sigmas away from the others.
    assert sr.high_outliers(np.array([[5.0] * 10 + [6.0]]))[0, -1]


@pytest.mark.parametrize(
    "ranks, slow_rank, kind, method",
    [(3, 2, "input", "Dixon"), (4, 1, "compute", "Dixon"), (9, 0, "input", "Dixon"), (12, 7, "compute", "3 sigma"), (64, 33, "input", "3 sigma")],
)
def test_slow_rank_named_with_its_cause(tmp_path, ranks, slow_rank, kind, method):
    write_cluster(tmp_path, ClusterPlan(ranks=ranks, steps=20, slow={slow_rank: (kind, 3000.0)}))
    report = analyze_cluster(tmp_path).report
    assert report.method.startswith(method)
    assert [(s.rank, s.causes, s.makes_others_wait) for s in report.slow_ranks] == [(slow_rank, [kind], True)]
    assert report.wait.waited_for == [slow_rank]
    metric = report.input if kind == "input" else report.compute
    other = report.compute if kind == "input" else report.input
    assert metric.slow_ranks == [slow_rank] and other.slow_ranks == []
    waits = {r: w.median_reduce_us for r, w in report.wait.ranks.items()}
    assert all(waits[r] > 4 * waits[slow_rank] for r in waits if r != slow_rank)  # the others wait in the Reduce
    assert f"SLOW RANK {slow_rank}: cause {kind}" in report.verdict


def test_two_ranks_use_the_vote_and_the_phase_excess(tmp_path):
    write_cluster(tmp_path, ClusterPlan(ranks=2, steps=20, slow={0: ("compute", 2000.0)}))
    report = analyze_cluster(tmp_path).report
    assert report.method.startswith("no outlier test")
    assert [(s.rank, s.causes) for s in report.slow_ranks] == [(0, ["likely compute"])]


def test_healthy_cluster_has_no_slow_rank(tmp_path):
    write_cluster(tmp_path, ClusterPlan(ranks=5, steps=40, jitter=0.05))
    report = analyze_cluster(tmp_path).report
    assert report.slow_ranks == []
    assert "No slow rank" in report.verdict


def test_sporadic_outlier_is_listed_but_the_rank_is_not_slow(tmp_path):
    write_cluster(tmp_path, ClusterPlan(ranks=4, steps=12, jitter=0.0))
    prof = find_prof_dirs_below(tmp_path)[2]
    path = layout.training_trace_path(prof, 2)
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    # Step 7 on rank 2: the forward pass takes 5 ms longer (and everything after it moves).
    for rec in lines[6:]:
        for key in ("bp_end", "iteration_end"):
            rec[key] += 5000
        rec["reduce"] = [[s + 5000, e + 5000] for s, e in rec["reduce"]]
        if rec["step"] > 7:
            rec["fp_start"] += 5000
            rec["get_next"] = [[s + 5000, e + 5000] for s, e in rec["get_next"]]
    path.write_text("".join(json.dumps(r) + "\n" for r in lines))
    report = analyze_cluster(tmp_path).report
    assert report.slow_ranks == []
    (spike,) = report.compute.sporadic
    assert (spike["step"], spike["rank"], spike["excess_us"]) == (7, 2, 5000.0)
    assert "step 7 (model 1) rank 2: FP to BP Time" in report.verdict


# ------------------------------------------------------------------ missing steps, odd folders
def test_missing_steps_are_reported_not_dropped(tmp_path, capsys):
    write_cluster(tmp_path, ClusterPlan(ranks=3, steps=20, drop={1: set(range(13, 21)), 2: {5}}))
    # rank 2 was also killed mid-write: a torn last line
    prof2 = find_prof_dirs_below(tmp_path)[2]
    with open(layout.training_trace_path(prof2, 2), "a") as handle:
        handle.write('{"model_id":1,"run":21,"get_ne')
    assert main(["cluster", str(tmp_path)]) == 0
    captured = capsys.readouterr()
    assert "MISSING STEPS (9 rank-steps" in captured.out
    assert "model 1 rank 1: 8 step(s) missing: 13-20 (stopped after step 12)" in captured.out
    assert "model 1 rank 2: 1 step(s) missing: 5" in captured.out
    assert "incomplete last line" in captured.err
    missing = slow_json(tmp_path)["missing_steps"]
    assert missing["total_missing"] == 9
    assert missing["models"]["1"]["ranks"]["1"] == {"count": 8, "steps": "13-20", "last_step": 12, "stopped_early": True}
    rows = read_rows(tmp_path)
    assert len([r for r in rows if r["Type"] == "rank"]) == 60 - 9
    ranks_of = {step: {r["Index"] for r in rows if r["Step"] == step} for step in ("4", "5", "13")}
    assert ranks_of == {"4": {"0", "1", "2"}, "5": {"0", "1"}, "13": {"0", "2"}}


def test_rank_without_records_counts_as_missing_everything(tmp_path):
    write_cluster(tmp_path, ClusterPlan(ranks=2, steps=5))
    empty = tmp_path / "PROF_99_20240102030405_EMPTY000" / "device_2"
    empty.mkdir(parents=True)
    (empty / "info.json").write_text(json.dumps({"device_id": 2}))
    with pytest.warns(RawDataWarning, match="rank 2 has no training_trace file"):
        analysis = analyze_cluster(tmp_path)
    assert analysis.all_rank_ids == [0, 1, 2]
    entry = analysis.report.missing["models"]["1"]["ranks"]["2"]
    assert entry == {"count": 5, "steps": "1-5", "last_step": None, "stopped_early": True}
    assert "(no records at all)" in analysis.report.verdict


def test_ranks_that_never_wrote_a_folder_are_named(tmp_path):
    """info.json's rank_size tells a rank that never started profiling from one that does not exist."""
    write_cluster(tmp_path, ClusterPlan(ranks=4, steps=5))
    for prof in find_prof_dirs_below(tmp_path)[2:]:  # ranks 2 and 3 left no folder at all
        shutil.rmtree(prof)
    data = load_cluster(tmp_path)
    assert "no folder for rank(s) 2, 3 of the 4 rank(s) the job has (rank_size in info.json)" in " ".join(data.notes)
    shutil.rmtree(find_prof_dirs_below(tmp_path)[0])  # now only rank 1 is left
    for info in tmp_path.glob("PROF_*/device_*/info.json"):
        info.write_text(json.dumps({k: v for k, v in json.loads(info.read_text()).items() if k != "rank_size"}))
    assert not any("no folder for rank" in note for note in load_cluster(tmp_path).notes)  # unknown size: no guess


def test_host_subfolders_are_searched_and_analysis_output_is_not(tmp_path):
    write_cluster(tmp_path / "host_a", ClusterPlan(ranks=2, steps=4))
    (tmp_path / "host_b").mkdir()
    for prof in find_prof_dirs_below(tmp_path / "host_a")[1:]:
        prof.rename(tmp_path / "host_b" / prof.name)
    assert main(["cluster", str(tmp_path)]) == 0
    assert main(["cluster", str(tmp_path)]) == 0  # re-run: its own output folder is not a rank
    assert len(find_prof_dirs_below(tmp_path)) == 2


def test_two_folders_claiming_one_rank_is_bad_input(tmp_path, capsys):
    write_cluster(tmp_path / "a", ClusterPlan(ranks=2, steps=3))
    write_cluster(tmp_path / "b", ClusterPlan(ranks=1, steps=3))
    assert main(["cluster", str(tmp_path)]) == 2
    assert "several folders claim the same rank (rank 0:" in capsys.readouterr().err


@pytest.mark.parametrize("case, code", [("missing", 2), ("file", 2), ("empty", 3), ("device", 2), ("no_records", 3)])
def test_exit_codes(tmp_path, capsys, case, code):
    target = tmp_path / "x"
    if case == "file":
        target.write_text("x")
    elif case == "empty":
        target.mkdir()
    elif case == "device":
        write_cluster(tmp_path, ClusterPlan(ranks=1, steps=2))
        target = find_prof_dirs_below(tmp_path)[0] / "device_0"
    elif case == "no_records":
        (target / "PROF_1_20240102030405_ABCDEFGH" / "device_0" / "data").mkdir(parents=True)
        (target / "PROF_1_20240102030405_ABCDEFGH" / "device_0" / "data" / "training_trace.jsonl").write_text("")
    assert main(["cluster", str(target)]) == code
    assert "npu-tf-prof cluster: error:" in capsys.readouterr().err


def test_json_flag_prints_slow_rank_json(tmp_path, capsys):
    write_cluster(tmp_path, ClusterPlan(ranks=3, steps=8, slow={1: ("input", 2000.0)}))
    assert main(["cluster", str(tmp_path), "--json", "--output-dir", str(tmp_path / "elsewhere")]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["slow_ranks"][0]["rank"] == 1 and printed["slow_ranks"][0]["causes"] == ["input"]
    assert (tmp_path / "elsewhere" / sr.JSON_NAME).is_file() and not (tmp_path / OUT).exists()


# ------------------------------------------------------------------ the timeline
def test_timeline_one_process_per_rank_valid(tmp_path):
    write_cluster(tmp_path, ClusterPlan(ranks=3, steps=6, groups=2))
    write_cluster_analysis(tmp_path)
    events = json.loads((tmp_path / OUT / ctl.JSON_NAME).read_text())
    assert validate_chrome_trace(events) == []
    names = {e["pid"]: e["args"]["name"] for e in events if e.get("name") == "process_name"}
    assert names == {0: "Rank 0 (node0, pid 10000)", 1: "Rank 1 (node0, pid 10001)", 2: "Rank 2 (node0, pid 10002)"}
    spans = [e for e in events if e.get("ph") == "X"]
    assert {e["name"] for e in spans if e["pid"] == 2} >= {"Iteration 6", "FP_BP Time 6", "Reduce_6_1", "Reduce_6_2"}


def test_timeline_spans_equal_the_single_device_step_trace_events(tmp_path):
    """The cluster timeline's fast JSON writer gives exactly step_trace_events' spans and tracks."""
    from npu_tf_profiling.reports.step.timeline import step_trace_events
    from tests.helpers.raw_fixtures import T0, make_prof_dir, record

    odd = [
        record(model_id=1, run=1, step=1, fp_start=T0 + 100, bp_end=T0 + 900, iteration_end=T0 + 1000,
               get_next=[[T0 + 20, T0 + 90]], reduce=[[T0 + 500, T0 + 950], [T0 + 600, T0 + 700]]),  # overlapping groups
        record(model_id=1, run=2, step=2, fp_start=T0 + 1100, bp_end=None, iteration_end=T0 + 2000, reduce=[[T0 + 1200, None]]),
        record(model_id=1, run=3, step=3, fp_start=T0 + 2100, bp_end=T0 + 2050, iteration_end=T0 + 3000),  # negative FP_BP
        record(model_id=2, run=1, step=None, fp_start=None, bp_end=None, iteration_end=T0 + 5000),
        record(model_id=2, run=2, step=None, fp_start=T0 + 5100, bp_end=T0 + 5200, iteration_end=T0 + 5300, get_next=[[T0 + 5050, None]]),
    ]
    make_prof_dir(tmp_path, {0: odd}, pid=1, info={"device_id": 0, "host": "node0", "pid": 7})  # one host: no shift
    write_cluster(tmp_path / "more", ClusterPlan(ranks=3, steps=4, groups=2))
    for prof in find_prof_dirs_below(tmp_path / "more")[1:]:
        prof.rename(tmp_path / prof.name)
    shutil.rmtree(tmp_path / "more")  # its rank 0: the odd records above are rank 0
    data = load_cluster(tmp_path)
    with pytest.warns(RawDataWarning, match="negative duration"):
        expected = step_trace_events(data.table)
    with pytest.warns(RawDataWarning, match="negative duration"):
        text, count, _ = ctl.cluster_timeline_json(data, ctl.align_clocks(data))
    got = json.loads(text)
    assert count == len(got) == len(expected)
    labels = {r.rank: ctl._rank_label(r) for r in data.ranks}
    for e in expected:
        if e["name"] == "process_name":
            e["args"]["name"] = labels[e["pid"]]
    canon = lambda events: sorted(json.dumps(e, sort_keys=True) for e in events)  # noqa: E731
    assert canon(got) == canon(expected)
    assert labels[0] == "Rank 0 (node0, pid 7)"


def test_ranks_on_several_hosts_are_put_on_one_clock(tmp_path):
    plan = ClusterPlan(ranks=3, steps=10, hosts={0: "a", 1: "b", 2: "b"}, clock_offset_us={1: 7000.0, 2: 7000.0})
    write_cluster(tmp_path, plan)
    analysis = write_cluster_analysis(tmp_path)
    assert analysis.alignment.shifts_us == {0: 0.0, 1: -7000.0, 2: -7000.0}
    assert "timeline clocks aligned" in analysis.report.verdict
    events = json.loads((tmp_path / OUT / ctl.JSON_NAME).read_text())
    ends = {}
    for e in events:
        if e.get("name") == "Reduce_5_1":
            ends[e["pid"]] = e["ts"] + e["dur"]
    assert max(ends.values()) - min(ends.values()) <= 1  # the all-reduce ends together again
    raw = write_cluster_analysis(tmp_path, align=ctl.ALIGN_NONE)
    assert raw.alignment.shifts_us == {0: 0.0, 1: 0.0, 2: 0.0}


def test_tasks_join_the_timeline_when_ranks_have_task_trace(tmp_path):
    from npu_tf_profiling.testing.task_synthetic import layered_ops, write_synthetic_prof_dir

    ops = layered_ops(6)
    for rank in (0, 1):
        write_synthetic_prof_dir(tmp_path, 4, ops, device_id=rank, pid=100 + rank, with_step=True,
                                 info={"device_id": rank, "host": "h"})
    analysis = write_cluster_analysis(tmp_path)
    events = json.loads((tmp_path / OUT / ctl.JSON_NAME).read_text())
    assert validate_chrome_trace(events) == []
    tasks = [e for e in events if e.get("cat") == "Task"]
    assert {e["pid"] for e in tasks} == {0, 1} and len(tasks) >= 2 * 4 * 6
    assert not any("tasks left out" in n for n in analysis.report.notes)
    assert main(["cluster", str(tmp_path), "--no-tasks"]) == 0
    assert not [e for e in json.loads((tmp_path / OUT / ctl.JSON_NAME).read_text()) if e.get("cat") == "Task"]


def test_rank_sources_are_pluggable(tmp_path, monkeypatch):
    write_cluster(tmp_path, ClusterPlan(ranks=2, steps=3))

    def marks(rank, rows, first_tid, shift):
        return ([{"name": "thread_name", "ph": "M", "pid": rank.rank, "tid": first_tid, "args": {"name": "Marks"}},
                 {"name": f"mark {rank.rank}", "ph": "i", "s": "t", "ts": 1.0, "pid": rank.rank, "tid": first_tid}], [])

    def broken(rank, rows, first_tid, shift):
        raise RuntimeError("boom")

    monkeypatch.setattr(ctl, "RANK_SOURCES", [marks, broken])
    analysis = write_cluster_analysis(tmp_path)
    events = json.loads((tmp_path / OUT / ctl.JSON_NAME).read_text())
    assert {e["name"] for e in events if e.get("ph") == "i"} == {"mark 0", "mark 1"}
    assert any("broken failed" in n for n in analysis.report.notes)


# ------------------------------------------------------------------ no TensorFlow
def test_cluster_command_never_imports_tensorflow(tmp_path):
    write_cluster(tmp_path, ClusterPlan(ranks=3, steps=5, slow={0: ("input", 2000.0)}))
    code = f"""
from npu_tf_profiling.cli import main
assert main(["cluster", {str(tmp_path)!r}]) == 0
"""
    assert "SLOW RANK 0: cause input" in run_without_tensorflow(code, tmp_path)


def test_no_all_reduce_data_says_so(tmp_path):
    from tests.helpers.raw_fixtures import iterations, make_prof_dir

    for rank in range(3):
        make_prof_dir(tmp_path, {rank: iterations(5, with_step=True)}, pid=rank + 1, info={"device_id": rank, "host": "h"})
    report = analyze_cluster(tmp_path).report
    assert report.wait.steps_voting == 0 and report.slow_ranks == []
    assert "no all-reduce traced" in report.verdict
    rows = cst.rank_rows(load_cluster(tmp_path).table)
    assert (rows[cst.COMMUNICATION] == 0).all() and rows[cst.REDUCE].isna().all()


def test_binomial_tail_and_a_coin_flip_wait_vote_is_not_a_verdict():
    assert sr.binomial_tail(0, 10, 0.5) == 1.0
    assert sr.binomial_tail(10, 10, 0.5) == pytest.approx(2 ** -10)
    assert sr.binomial_tail(10, 20, 0.5) == pytest.approx(0.588, abs=1e-3)
    assert sr.binomial_tail(27, 30, 1 / 3) < 1e-9
    assert 0 < sr.binomial_tail(900, 1000, 0.5) < 1e-100
    rows = []
    for step in range(1, 21):  # 2 ranks; the shorter Reduce alternates (by more than the effect floor)
        for rank in (0, 1):
            short = (step + rank) % 2 == 0
            rows.append({cst.MODEL_ID: 1, cst.STEP: step, cst.INDEX: rank, cst.REDUCE: 100.0 if short else 900.0,
                         cst.ITERATION_TIME: 3000.0})
    import pandas as pd

    wait = sr.wait_votes(pd.DataFrame(rows))
    assert {r: w.votes for r, w in wait.ranks.items()} == {0: 10, 1: 10}
    assert wait.waited_for == []  # 50% of the votes each: chance, not a slow rank


def test_communication_shares(tmp_path):
    # comm 500 of a ~3000 µs step when nobody waits: about 1/6 not overlapped on every rank
    write_cluster(tmp_path, ClusterPlan(ranks=3, steps=10, jitter=0.0))
    shares = analyze_cluster(tmp_path).report.communication
    expected = 500 / (300 + 2000 + 500 + 200)
    assert all(v == pytest.approx(expected, abs=1e-3) for v in shares["not_overlapped_share_per_rank"].values())
    assert shares["not_overlapped_share_max_over_ranks"] == pytest.approx(expected, abs=1e-3)
    assert shares["overlapped_share_max_over_ranks"] == 0
