"""The msprof-analyze / MindStudio Insight folders we write (reports.msprof), checked file by file.

Synthetic raw data (no TensorFlow, no msprof-analyze): every value is checked
against our own tables, so the layout says what our reports say.
tests/test_msprof_analyze.py runs Huawei's tool on real runs.
"""
from __future__ import annotations

import csv
import json
import sqlite3
import threading
import warnings
from pathlib import Path

import numpy as np
import pytest

from npu_tf_profiling.raw_format import layout
from npu_tf_profiling.cli import main
from npu_tf_profiling.reports.cluster import step_table as cst
from npu_tf_profiling.reports.encoders.chrome_trace import validate_chrome_trace
from npu_tf_profiling.reports.cluster.data import load_cluster
from npu_tf_profiling.testing.cluster_synthetic import ClusterPlan, write_cluster
from npu_tf_profiling.reports.msprof import db_schema
from npu_tf_profiling.reports.msprof.step_trace_time import HEADER
from npu_tf_profiling.testing.task_synthetic import layered_ops, write_synthetic_prof_dir
from npu_tf_profiling.reports.writer import write_all_reports
from tests.helpers.no_tensorflow import run_without_tensorflow

OUTPUT = "ASCEND_PROFILER_OUTPUT"
STEPS = 12
# msprof-analyze's key of HCCL's world group (its double hash of "hccl_world_group", computed with msprof-analyze 26.2.0).
WORLD_GROUP_HASH = "7415574198778220483"


@pytest.fixture
def cluster(tmp_path) -> Path:
    """Two ranks, two all-reduce groups per step, reports written (as each worker does at exit)."""
    write_cluster(tmp_path, ClusterPlan(ranks=2, steps=STEPS, groups=2))
    assert main(["report", str(tmp_path)]) == 0
    return tmp_path


def rank_folder(root: Path, rank: int) -> Path:
    (folder,) = root.glob(f"*_rank{rank}_*_ascend_pt")
    return folder


def read_csv(path: Path) -> list[dict[str, str]]:
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle))


def our_rows(root: Path) -> dict[tuple[int, int], dict[str, float]]:
    rows = cst.rank_rows(load_cluster(root).table)
    return {(int(r[cst.STEP]), int(r[cst.INDEX])): r for r in rows.to_dict("records")}


def query(db: Path, sql: str) -> list[tuple]:
    with sqlite3.connect(db) as conn:
        return conn.execute(sql).fetchall()


# ------------------------------------------------------------------ folders and names
def test_one_folder_per_rank_beside_the_prof_folders(cluster):
    for rank in (0, 1):
        folder = rank_folder(cluster, rank)
        assert folder.parent == cluster and folder.name.startswith("node0_")  # host_pid_id_rank_time_ascend_pt
        files = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())
        assert files == sorted([
            f"profiler_info_{rank}.json", "profiler_metadata.json", f"{OUTPUT}/step_trace_time.csv",
            f"{OUTPUT}/trace_view.json", f"{OUTPUT}/communication.json", f"{OUTPUT}/communication_matrix.json",
            f"{OUTPUT}/ascend_pytorch_profiler_{rank}.db", f"{OUTPUT}/analysis.db",
        ])  # no kernel_details.csv: task_trace did not run
    before = sorted(p.name for p in cluster.iterdir())
    assert main(["report", str(cluster)]) == 0  # rebuilding replaces the files, no second folder
    assert sorted(p.name for p in cluster.iterdir()) == before


def test_profiler_info_and_metadata(cluster):
    folder = rank_folder(cluster, 1)
    info = json.loads((folder / "profiler_info_1.json").read_text())
    assert (info["rank_id"], info["device_id"], info["host"], info["pid"]) == (1, 1, "node0", 10001)
    assert info["framework"] == "TensorFlow" and info["npu_tf_profiling_version"]
    assert info["source"].startswith("PROF_10001_")
    steps = read_csv(folder / OUTPUT / "step_trace_time.csv")
    start, end = info["start_info"]["start_time_ns"], info["end_info"]["end_time_ns"]
    assert start < end and (end - start) / 1000 >= sum(int(r["Stage"]) for r in steps)
    meta = json.loads((folder / "profiler_metadata.json").read_text())
    assert meta == {"parallel_group_info": {"hccl_world_group": {"group_name": "dp", "group_rank": 1, "global_ranks": [0, 1]}}}


# ------------------------------------------------------------------ numbers
def test_step_trace_time_csv_is_our_cluster_table(cluster):
    ours = our_rows(cluster)
    for rank in (0, 1):
        path = rank_folder(cluster, rank) / OUTPUT / "step_trace_time.csv"
        assert path.read_text().splitlines()[0] == ",".join(HEADER)
        rows = read_csv(path)
        assert [int(r["Step"]) for r in rows] == list(range(1, STEPS + 1))
        for row in rows:
            mine = ours[(int(row["Step"]), rank)]
            for column in HEADER[1:]:
                expected = mine[column]
                assert row[column].isdigit(), (column, row[column])  # only numbers: N/A would read as 0 with a warning
                assert int(row[column]) == (0 if np.isnan(expected) else int(np.floor(expected + 0.5))), column


def test_profiler_database_tables(cluster):
    names_by_rank = {}
    for rank in (0, 1):
        db = rank_folder(cluster, rank) / OUTPUT / f"ascend_pytorch_profiler_{rank}.db"
        tables = {name: [c[1] for c in query(db, f"PRAGMA table_info({name})")]
                  for (name,) in query(db, "SELECT name FROM sqlite_master WHERE type='table'")}
        assert tables == {t: [c for c, _ in cols] for t, cols in db_schema.PROFILER_TABLES.items()}
        assert query(db, "SELECT rankId, deviceId FROM RANK_DEVICE_MAP") == [(rank, rank)]
        assert query(db, "SELECT hostName FROM HOST_INFO") == [("node0",)]
        steps = query(db, "SELECT id, startNs, endNs FROM STEP_TIME ORDER BY id")
        assert [s[0] for s in steps] == list(range(1, STEPS + 1))
        assert all(start < end for _, start, end in steps)
        assert [s[2] for s in steps[:-1]] == [s[1] for s in steps[1:]]  # windows tile: previous end -> end
        ops = query(db, """SELECT n.value, g.value, t.value, op.startNs, op.endNs, api.type FROM COMMUNICATION_OP op
                           JOIN STRING_IDS n ON n.id = op.opName JOIN STRING_IDS g ON g.id = op.groupName
                           JOIN STRING_IDS t ON t.id = op.opType JOIN CANN_API api ON api.connectionId = op.connectionId""")
        assert len(ops) == 2 * STEPS and {(g, t, api) for _, g, t, _, _, api in ops} == {("hccl_world_group", "hcom_allReduce_", 5500)}
        names_by_rank[rank] = sorted(op[0] for op in ops)
        memcpy = query(db, "SELECT count(*) FROM TASK JOIN STRING_IDS s ON s.id = TASK.taskType WHERE s.value = 'MEMCPY_ASYNC'")
        assert memcpy == [(STEPS,)]  # one per GetNext span
        assert query(db, "SELECT value FROM STRING_IDS WHERE id = (SELECT name FROM PYTORCH_API LIMIT 1)") == [("ProfilerStep#1",)]
    assert names_by_rank[0] == names_by_rank[1]  # one collective has one name on every rank
    assert "hcom_allReduce__1_7_2" in names_by_rank[0]  # model 1, step 7, group 2


def test_analysis_database_equals_the_csv(cluster):
    folder = rank_folder(cluster, 0)
    db = folder / OUTPUT / "analysis.db"
    csv_rows = [[r[h] for h in HEADER] for r in read_csv(folder / OUTPUT / "step_trace_time.csv")]
    db_rows = [[str(v) for v in row] for row in query(db, "SELECT * FROM StepTraceTime")]
    assert db_rows == csv_rows
    comm = query(db, "SELECT hccl_op_name, group_name, elapse_time, transit_time, wait_time, step, type FROM CommAnalyzerTime")
    assert len(comm) == 2 * STEPS
    assert {(g, t) for _, g, _, _, _, _, t in comm} == {(WORLD_GROUP_HASH, "collective")}
    assert all(elapse == transit > 0 and wait == 0 for _, _, elapse, transit, wait, _, _ in comm)
    assert query(db, "SELECT count(*) FROM CommAnalyzerBandwidth") == query(db, "SELECT count(*) FROM CommAnalyzerMatrix") == [(0,)]


def test_communication_json(cluster):
    folder = rank_folder(cluster, 0)
    comm = json.loads((folder / OUTPUT / "communication.json").read_text())
    assert sorted(comm) == sorted(f"step{s}" for s in range(1, STEPS + 1))
    step = comm["step3"]
    assert step["p2p"] == {}
    ops = {k: v for k, v in step["collective"].items() if k != "Total Op Info"}
    assert sorted(ops) == [f"hcom_allReduce__1_3_{g}@{WORLD_GROUP_HASH}" for g in (1, 2)]
    elapse = sum(v["Communication Time Info"]["Elapse Time(ms)"] for v in ops.values())
    assert step["collective"]["Total Op Info"]["Communication Time Info"]["Elapse Time(ms)"] == pytest.approx(elapse)
    analysis = {r[0]: r[1] for r in query(folder / OUTPUT / "analysis.db", "SELECT hccl_op_name, elapse_time FROM CommAnalyzerTime")}
    for key, value in ops.items():
        assert value["Communication Time Info"]["Elapse Time(ms)"] == pytest.approx(analysis[key.split("@")[0]])
        assert value["Communication Bandwidth Info"] == {}  # bytes per link are not recorded
    matrix = json.loads((folder / OUTPUT / "communication_matrix.json").read_text())
    assert sorted(matrix) == sorted(comm) and all(v == {"collective": {}, "p2p": {}} for v in matrix.values())


def test_trace_view_overlap_tracks_add_up_to_the_step_table(cluster):
    folder = rank_folder(cluster, 1)
    events = json.loads((folder / OUTPUT / "trace_view.json").read_text())
    assert validate_chrome_trace(events) == []
    processes = {e["pid"]: e["args"]["name"] for e in events if e["name"] == "process_name"}
    assert sorted(processes.values()) == ["Communication", "Overlap Analysis", "Python"]  # no tasks: no Ascend Hardware
    threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in events if e["name"] == "thread_name"}
    sums: dict[tuple[str, int], float] = {}
    for e in events:
        if e["ph"] == "X" and processes[e["pid"]] == "Overlap Analysis":
            key = (threads[(e["pid"], e["tid"])], e["args"]["Step Id"])
            sums[key] = sums.get(key, 0.0) + e["dur"]
    for row in read_csv(folder / OUTPUT / "step_trace_time.csv"):
        step = int(row["Step"])
        for track in ("Computing", "Communication", "Communication(Not Overlapped)", "Free"):
            assert sums.get((track, step), 0.0) == pytest.approx(float(row[track]), abs=1), (track, step)
    steps = [e["name"] for e in events if e["ph"] == "X" and processes[e["pid"]] == "Python" and e["name"].startswith("ProfilerStep#")]
    assert steps == [f"ProfilerStep#{s}" for s in range(1, STEPS + 1)]


def test_kernel_details_where_task_trace_ran(tmp_path):
    run = write_synthetic_prof_dir(tmp_path, 6, layered_ops(8), traced=[3, 4], with_step=True,
                                   info={"device_id": 0, "host": "h", "pid": 4242, "rank_size": 1})
    write_all_reports(run.prof_dir)
    folder = rank_folder(tmp_path, 0)
    rows = read_csv(folder / OUTPUT / "kernel_details.csv")
    (task_time,) = (run.prof_dir / layout.REPORT_DIR).glob("task_time_*.csv")
    ours = read_csv(task_time)
    assert len(rows) == len(ours) == 2 * 8
    for kd, tt in zip(sorted(rows, key=lambda r: (r["Start Time(us)"], r["Name"])), sorted(ours, key=lambda r: (r["Task Start(us)"], r["Op Name"]))):
        assert (kd["Name"], kd["Type"], kd["Accelerator Core"], kd["Step Id"]) == (tt["Op Name"], tt["Op Type"], tt["Task Type"], tt["Iteration ID"])
        assert (kd["Start Time(us)"], kd["Duration(us)"]) == (tt["Task Start(us)"], tt["Task Duration(us)"])
        assert kd["OP State"] == "static" and kd["Block Num"] == "N/A"
    db = folder / OUTPUT / "ascend_pytorch_profiler_0.db"
    tasks = query(db, """SELECT n.value, t.endNs - t.startNs FROM COMPUTE_TASK_INFO c JOIN TASK t ON t.globalTaskId = c.globalTaskId
                         JOIN STRING_IDS n ON n.id = c.name JOIN CANN_API a ON a.connectionId = t.connectionId""")
    assert len(tasks) == 2 * 8
    views = json.loads((folder / OUTPUT / "trace_view.json").read_text())
    assert validate_chrome_trace(views) == []
    hardware = {e["pid"] for e in views if e["name"] == "process_name" and e["args"]["name"] == "Ascend Hardware"}
    assert len([e for e in views if e["ph"] == "X" and e["pid"] in hardware]) == 2 * 8


# ------------------------------------------------------------------ living with our own tools
def test_our_readers_ignore_the_msprof_folders(cluster, capsys):
    (cluster / "cluster_analysis_output").mkdir()  # msprof-analyze's default output lands here
    assert main(["summary", str(next(cluster.glob("PROF_*")))]) == 0
    assert main(["cluster", str(cluster)]) == 0
    assert "2 rank(s) with data (0, 1)" in capsys.readouterr().out
    assert len(read_csv(cluster / "npu_tf_prof_cluster" / "cluster_step_trace_time.csv")) == 2 * STEPS


def test_cluster_writes_the_folder_of_a_rank_that_has_none(tmp_path, capsys):
    write_cluster(tmp_path, ClusterPlan(ranks=3, steps=5))  # nobody wrote reports: the workers were killed
    assert not list(tmp_path.glob("*_ascend_pt"))
    assert main(["cluster", str(tmp_path)]) == 0
    assert "msprof-analyze layout written for rank(s) 0, 1, 2" in capsys.readouterr().err
    assert [len(read_csv(rank_folder(tmp_path, r) / OUTPUT / "step_trace_time.csv")) for r in range(3)] == [5, 5, 5]
    assert main(["cluster", str(tmp_path)]) == 0
    assert "msprof-analyze layout" not in capsys.readouterr().err  # up to date now: not rewritten


def test_a_failure_in_the_msprof_layout_costs_only_a_warning(tmp_path):
    write_cluster(tmp_path, ClusterPlan(ranks=1, steps=3))
    prof = next(tmp_path.glob("PROF_*"))
    blocked = tmp_path / "node0_10000_RANK0000_rank0_20240102030405_ascend_pt"
    blocked.mkdir()
    (blocked / OUTPUT).write_text("a file where the folder must go")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        written = write_all_reports(prof)
    assert [p.suffix for p in written] == [".csv", ".json"]  # our step trace is written all the same
    assert any("msprof-analyze layout not written" in str(w.message) for w in caught)


def test_the_layout_beside_the_others_is_the_same_when_no_thread_can_start(tmp_path, monkeypatch):
    """The ranks' folders are written on a second thread; where none can start (an interpreter shutting down,
    Python 3.12+), one after another: the same files and notes, in the same order."""
    write_cluster(tmp_path, ClusterPlan(ranks=1, steps=3))
    prof = next(tmp_path.glob("PROF_*"))
    threaded = write_all_reports(prof)
    contents = {p: p.read_bytes() for p in sorted(tmp_path.rglob("*.csv"))}

    def refuse(self):
        raise RuntimeError("can't create new thread at interpreter shutdown")

    monkeypatch.setattr(threading.Thread, "start", refuse)
    alone = write_all_reports(prof)
    assert list(alone) == list(threaded) and alone.notes == threaded.notes and alone.layout_folders == threaded.layout_folders
    assert threaded.layout_folders and {p: p.read_bytes() for p in sorted(tmp_path.rglob("*.csv"))} == contents


def test_the_layout_is_written_without_tensorflow(cluster):
    out = run_without_tensorflow(
        "from npu_tf_profiling.reports.prof_dir import load_prof_dir\n"
        "from npu_tf_profiling.reports.msprof.writer import write_prof_dir_layouts\n"
        f"print(len(write_prof_dir_layouts(load_prof_dir(next(__import__('pathlib').Path({str(cluster)!r}).glob('PROF_*'))))))\n",
        cluster,
    )
    assert out.strip() == "1"  # the one rank folder of that PROF folder
