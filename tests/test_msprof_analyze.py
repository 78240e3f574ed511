"""Huawei's msprof-analyze (pinned in constraints-msprof.txt) reads our output and agrees with our numbers.

On the session's real 2-worker MultiWorkerMirroredStrategy job (``conftest.two_workers``):

* ``cluster -m all`` finds both ranks (database layout) and its step table equals ours, row for row;
  so does the table it builds from a text-only copy (no databases: the CSV path); its default
  output (``cluster_analysis_output`` in the input folder) leaves ours alone;
* the ``cluster_time_summary`` and ``slow_rank`` recipes run and write their results (``slow_rank``
  needs 4 ranks to name one: on a synthetic 4-rank job it names the rank ours names);
* ``advisor all`` takes the folder for a 2-rank PyTorch cluster and writes its report.

On single-rank runs with task_trace (a small CNN, in this process): ``advisor`` runs its
operator and timeline checks, and ``compare`` compares two runs; both from the databases
and from a text-only copy (kernel_details.csv, trace_view.json).
"""
from __future__ import annotations

import csv
import json
import re
import shutil
import sqlite3
from pathlib import Path

import pytest
import tensorflow.compat.v1 as tf

from npu_tf_profiling.cli import main
from npu_tf_profiling.config.session_proto import write_request
from npu_tf_profiling.testing.cluster_synthetic import ClusterPlan, write_cluster
from tests.helpers.msprof_tool import problems, run_msprof_analyze
from tests.helpers.multi_worker_jobs import STEPS
from tests.test_runtime_tasks import small_cnn

pytestmark = pytest.mark.timeout(900)  # above msprof_tool.TIMEOUT_S, the tool's own hang guard

COMPARED = ["Computing", "Communication(Not Overlapped)", "Overlapped", "Communication", "Free"]
DB_COLUMNS = ["computing", "communication_not_overlapped", "overlapped", "communication", "free"]


def copy_output(src: Path, dst: Path, keep_databases: bool = True) -> Path:
    """A copy of an output folder to run a tool that writes into its input (text-only: without the .db files)."""
    shutil.copytree(src, dst, ignore=None if keep_databases else shutil.ignore_patterns("*.db"))
    return dst


def our_step_rows(output: Path, into: Path) -> dict[tuple[int, int], dict[str, float]]:
    """(step, rank) -> the compared columns of our own ``npu-tf-prof cluster`` table."""
    assert main(["cluster", str(output), "--output-dir", str(into)]) == 0
    with open(into / "cluster_step_trace_time.csv", newline="") as handle:
        return {(int(r["Step"]), int(r["Index"])): {c: float(r[c]) for c in COMPARED} for r in csv.DictReader(handle)}


def assert_equal_rows(theirs: dict[tuple[int, int], dict[str, float]], ours: dict[tuple[int, int], dict[str, float]]) -> None:
    assert sorted(theirs) == sorted(ours) == [(s, r) for s in range(1, STEPS + 1) for r in (0, 1)]
    for key, row in ours.items():
        for column in COMPARED:
            assert abs(theirs[key][column] - row[column]) <= 1.0, (key, column, theirs[key][column], row[column])


# ------------------------------------------------------------------ the 2-worker job
@pytest.fixture(scope="module")
def ours(two_workers, tmp_path_factory):
    out, codes = two_workers
    assert codes == {0: 0, 1: 0}
    return our_step_rows(out, tmp_path_factory.mktemp("ours"))


def test_cluster_finds_both_ranks_equals_our_step_table_and_leaves_our_output_alone(two_workers, ours, tmp_path):
    """``cluster -m all`` without ``-o`` writes into its input folder: run on a copy holding our own analysis."""
    out = copy_output(two_workers[0], tmp_path / "output")
    assert main(["cluster", str(out)]) == 0
    our_dir = out / "npu_tf_prof_cluster"
    before = {p.name: p.read_bytes() for p in our_dir.iterdir()}
    assert set(before) == {"cluster_step_trace_time.csv", "slow_rank.json", "slow_rank.txt", "cluster_timeline.json"}
    log = run_msprof_analyze("cluster", "-d", out, "-m", "all", cwd=tmp_path)
    assert "Finish allocate profiling data: 2 ranks, data type: db, profiling type: pytorch" in log, log
    assert problems(log) == []
    with sqlite3.connect(out / "cluster_analysis_output" / "cluster_analysis.db") as conn:
        rows = conn.execute(f"SELECT step, type, [index], {', '.join(DB_COLUMNS)} FROM ClusterStepTraceTime").fetchall()
    assert {r[1] for r in rows} == {"rank"}  # a data-parallel job has no pipeline stages, so no stage rows
    assert_equal_rows({(int(r[0]), int(r[2])): dict(zip(COMPARED, map(float, r[3:]))) for r in rows}, ours)
    assert {p.name: p.read_bytes() for p in our_dir.iterdir()} == before
    assert main(["cluster", str(out)]) == 0  # ours still reads the folder, msprof-analyze's output in it
    assert (our_dir / "cluster_step_trace_time.csv").read_bytes() == before["cluster_step_trace_time.csv"]


def test_text_only_copy_gives_the_same_step_table(two_workers, ours, tmp_path):
    text_only = copy_output(two_workers[0], tmp_path / "text_only", keep_databases=False)
    log = run_msprof_analyze("cluster", "-d", text_only, "-m", "all", "-o", tmp_path / "msprof", cwd=tmp_path)
    assert "2 ranks, data type: text, profiling type: pytorch" in log, log
    assert problems(log) == []
    with open(tmp_path / "msprof" / "cluster_analysis_output" / "cluster_step_trace_time.csv", newline="") as handle:
        theirs = {(int(r["Step"]), int(r["Index"])): {c: float(r[c]) for c in COMPARED} for r in csv.DictReader(handle)}
    assert_equal_rows(theirs, ours)


def test_cluster_time_summary_recipe(two_workers, ours, tmp_path):
    out, _ = two_workers
    log = run_msprof_analyze("cluster", "-d", out, "-m", "cluster_time_summary", "-o", tmp_path, cwd=tmp_path)
    assert problems(log) == []
    with sqlite3.connect(tmp_path / "cluster_analysis_output" / "cluster_analysis.db") as conn:
        rows = conn.execute("SELECT rank, step, stepTime, computation, communication, memory FROM ClusterTimeSummary").fetchall()
    assert sorted((r[0], r[1]) for r in rows) == sorted((rank, step) for step, rank in ours)
    for rank, step, step_time, computation, communication, memory in rows:
        mine = ours[(step, rank)]
        assert computation == mine["Computing"] and communication == mine["Communication"]
        assert step_time == pytest.approx(mine["Computing"] + mine["Communication(Not Overlapped)"] + mine["Free"], abs=1)
        assert memory >= 0  # the GetNext transfers; the first step's happens before its window


def test_slow_rank_recipe_runs(two_workers, tmp_path):
    out, _ = two_workers
    log = run_msprof_analyze("cluster", "-d", out, "-m", "slow_rank", "-o", tmp_path, cwd=tmp_path)
    assert problems(log) == []
    # Dixon's test needs 4 ranks or more (msprof-analyze 26.2.0); with 2 it finds none and says so.
    # tests/test_msprof_layout.py has a 4-rank job where it names the slow rank.
    assert "No slow rank found" in log, log


def test_slow_rank_recipe_names_the_rank_ours_names(tmp_path):
    """4 ranks (Dixon's test needs 4), rank 2 computes 3 ms longer: everyone else waits for it in the all-reduce."""
    write_cluster(tmp_path / "output", ClusterPlan(ranks=4, steps=12, slow={2: ("compute", 3000.0)}))
    assert main(["report", str(tmp_path / "output")]) == 0
    assert main(["cluster", str(tmp_path / "output"), "--json"]) == 0
    verdict = json.loads((tmp_path / "output" / "npu_tf_prof_cluster" / "slow_rank.json").read_text())
    assert [(r["rank"], r["makes_others_wait"]) for r in verdict["slow_ranks"]] == [(2, True)]
    log = run_msprof_analyze("cluster", "-d", tmp_path / "output", "-m", "slow_rank", "-o", tmp_path, cwd=tmp_path)
    assert problems(log) == []
    with sqlite3.connect(tmp_path / "cluster_analysis_output" / "cluster_analysis.db") as conn:
        votes = dict(conn.execute("SELECT rankId, slowAffectCount FROM SlowRank").fetchall())
    assert set(votes) == {2} and votes[2] >= 6  # only rank 2 gets votes, from half the steps or more


def test_advisor_reads_the_output_as_a_pytorch_cluster(two_workers, tmp_path):
    out, _ = two_workers
    log = run_msprof_analyze("advisor", "all", "-d", out, "-o", tmp_path, "-l", "en", cwd=tmp_path)
    assert problems(log) == []
    assert "Start cluster" in log or "slow rank" in log, log  # the cluster analyses ran (2 ranks)
    assert list(tmp_path.glob("mstt_advisor_*.html")) and list((tmp_path / "log").glob("mstt_advisor_*.xlsx"))


# ------------------------------------------------------------------ single-rank runs with task_trace
def train_cnn(output: Path, iterations: int = 8) -> Path:
    """A small CNN, task_trace on iterations 3-5; returns its msprof-analyze rank folder."""
    graph = tf.Graph()
    train_op, init = small_cnn(graph)
    config = tf.ConfigProto()
    options = {"output": str(output), "training_trace": "on", "task_trace": "on", "start_step": 3, "stop_step": 5}
    write_request(config, True, json.dumps(options))
    with tf.Session(graph=graph, config=config) as sess:
        sess.run(init)
        for _ in range(iterations):
            sess.run(train_op)
    (folder,) = output.glob("*_ascend_pt")
    return folder


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory) -> tuple[Path, Path]:
    return train_cnn(tmp_path_factory.mktemp("run_a")), train_cnn(tmp_path_factory.mktemp("run_b"))


OPERATOR_CHECKS = ["OperatorBoundAnalyzer", "AicpuAnalyzer", "DynamicShapeAnalyzer"]
TIMELINE_CHECKS = ["GcAnalyzer", "DataloaderAnalyzer", "SynchronizeStreamAnalyzer", "OpDispatchAnalyzer"]


@pytest.mark.parametrize("layout", ["databases", "text only"])
def test_advisor_runs_operator_and_timeline_checks(two_runs, layout, tmp_path):
    folder = two_runs[0]  # one rank: give its *_ascend_pt folder (the text-file reader looks in it only)
    if layout == "text only":
        folder = copy_output(folder, tmp_path / folder.name, keep_databases=False)
    log = run_msprof_analyze("advisor", "all", "-d", folder, "-o", tmp_path, "-l", "en", cwd=tmp_path)
    assert problems(log) == []
    ran = set(re.findall(r"Start analysis (\w+)", log))
    assert set(OPERATOR_CHECKS + TIMELINE_CHECKS) <= ran, sorted(ran)
    assert "dynamic shape" not in log.lower()  # graph-mode ops are static (OP State)
    assert list(tmp_path.glob("mstt_advisor_*.html"))


@pytest.mark.parametrize("layout", ["databases", "text only"])
def test_compare_two_runs(two_runs, layout, tmp_path):
    if layout == "databases":
        base, other = two_runs
    else:
        base = copy_output(two_runs[0], tmp_path / "a" / two_runs[0].name, keep_databases=False)
        other = copy_output(two_runs[1], tmp_path / "b" / two_runs[1].name, keep_databases=False)
    log = run_msprof_analyze("compare", "-d", other, "-bp", base, "-o", tmp_path / "compare", cwd=tmp_path)
    assert problems(log) == []
    assert list((tmp_path / "compare").glob("performance_comparison_result_*.xlsx"))


def test_long_ranks_database_only_folders_give_the_same_step_table(tmp_path, monkeypatch):
    """A long rank's folder holds only what the cluster analysis reads in db mode (issue 39): still the same table."""
    from npu_tf_profiling.reports.msprof import writer as msprof_writer

    out = tmp_path / "output"
    write_cluster(out, ClusterPlan(ranks=2, steps=STEPS))
    monkeypatch.setattr(msprof_writer, "TEXT_LAYOUT_MAX_EVENTS", 1)  # every rank is "long"
    assert main(["report", str(out)]) == 0
    folders = sorted(out.glob("*_ascend_pt"))
    assert len(folders) == 2 and not list(out.rglob("trace_view.json")) and not list(out.rglob("step_trace_time.csv"))
    ours = our_step_rows(out, tmp_path / "ours")
    log = run_msprof_analyze("cluster", "-d", out, "-m", "all", "-o", tmp_path / "msprof", cwd=tmp_path)
    assert "2 ranks, data type: db, profiling type: pytorch" in log, log
    assert problems(log) == []
    with sqlite3.connect(tmp_path / "msprof" / "cluster_analysis_output" / "cluster_analysis.db") as conn:
        rows = conn.execute(f"SELECT step, type, [index], {', '.join(DB_COLUMNS)} FROM ClusterStepTraceTime").fetchall()
    assert_equal_rows({(int(r[0]), int(r[2])): dict(zip(COMPARED, map(float, r[3:]))) for r in rows}, ours)
