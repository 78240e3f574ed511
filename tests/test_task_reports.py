"""task_trace reports from synthetic raw data (no TensorFlow): task_time, op_summary,
op_statistic, the msprof timeline and its split, skip rules, torn/corrupt records."""
from __future__ import annotations

import csv
import json
import warnings
from collections import Counter, defaultdict
from pathlib import Path

import pytest

from npu_tf_profiling.raw_format.run_info import RunInfo
from npu_tf_profiling.raw_format import layout
from npu_tf_profiling.cli import main
from npu_tf_profiling.reports.step import records as raw_mod
from npu_tf_profiling.reports.encoders.chrome_trace import validate_chrome_trace
from npu_tf_profiling.reports.errors import NothingFoundError, RawDataWarning
from npu_tf_profiling.testing.task_synthetic import (
    CPU_DEVICE,
    PROF_TS,
    SynthOp,
    layered_ops,
    write_synthetic_prof_dir,
)
from npu_tf_profiling.raw_format.task_record import frame_task_record as frame_record
from npu_tf_profiling.reports.task.classify import is_reported_name, op_type_from_label
from npu_tf_profiling.reports.task.records import read_task_trace
from npu_tf_profiling.reports.task.table import load_device_tasks, task_windows
from npu_tf_profiling.reports.writer import write_all_reports

from tests.helpers.no_tensorflow import run_without_tensorflow
TASK_HEADER = [
    "Device_id", "Model ID", "Iteration ID", "Op Name", "Op Type", "Task Type", "Stream ID",
    "Task Start(us)", "Task Duration(us)", "Task Wait(us)",
]
GPU0 = "/job:localhost/replica:0/task:0/device:GPU:0"


def _csv(path: Path) -> list[dict[str, str]]:
    with open(path, newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def _header(path: Path) -> list[str]:
    with open(path, newline="", encoding="utf-8") as handle:
        return next(csv.reader(handle))


def _out(prof: Path, stem: str, ext: str = "csv") -> Path:
    return layout.report_dir(prof) / f"{stem}_{PROF_TS}.{ext}"


def _us(ns: int) -> str:
    return f"{ns // 1000}.{ns % 1000:03d}"


def _tasks(events):
    return [e for e in events if e.get("ph") == "X" and e.get("cat") == "Task"]


def _load_timelines(paths):
    return [json.loads(p.read_text()) for p in paths if p.name.startswith("msprof_")]


# ----- task_time ------------------------------------------------------------------------------------
def test_task_time_has_one_row_per_op_of_the_traced_iterations_only(tmp_path):
    ops = layered_ops(12, threads=2)
    run = write_synthetic_prof_dir(tmp_path, 10, ops, traced=[3, 4, 5])
    paths = write_all_reports(run.prof_dir)
    names = sorted(p.name for p in paths)
    assert names == sorted(
        f"{stem}_{PROF_TS}.{ext}"
        for stem, ext in [("step_trace", "csv"), ("step_trace", "json"), ("task_time", "csv"), ("op_summary", "csv"), ("op_statistic", "csv"), ("msprof", "json")]
    )
    assert _header(_out(run.prof_dir, "task_time")) == TASK_HEADER
    rows = _csv(_out(run.prof_dir, "task_time"))
    assert len(rows) == len(ops) * 3
    assert Counter(r["Iteration ID"] for r in rows) == {"3": 12, "4": 12, "5": 12}
    by_it = {it.run: it for it in run.iterations}
    expected = {}
    for it in run.traced():
        for op in ops:
            expected[(str(it.run), op.name)] = op, it.fp_start_ns + op.offset_ns
    for row in rows:
        op, start_ns = expected.pop((row["Iteration ID"], row["Op Name"]))
        assert row["Device_id"] == "0" and row["Model ID"] == "1"
        assert row["Op Type"] == op.op_type and row["Task Type"] == "CPU" and row["Stream ID"] == str(op.thread)
        assert row["Task Start(us)"] == _us(start_ns)
        assert row["Task Duration(us)"] == _us(op.dur_ns)
        first_on_thread = op.offset_ns == 0
        assert row["Task Wait(us)"] == ("0.000" if first_on_thread else "0.500")  # layered_ops' 500 ns gap
    assert not expected
    # rows come in Iteration ID, then start order
    keys = [(int(r["Iteration ID"]), r["Task Start(us)"]) for r in rows]
    assert keys == sorted(keys)
    assert by_it[4].traced and not by_it[6].traced


def test_skipped_nodes_are_counted_and_reported(tmp_path, capsys):
    run = write_synthetic_prof_dir(tmp_path, 4, layered_ops(5), traced=[2, 3])
    assert main(["report", str(run.prof_dir)]) == 0
    err = capsys.readouterr().err
    assert "note: device 0: 10 tasks in 2 traced iteration(s); skipped 6 executor nodes (names starting with '_'), 2 profiler probe ops" in err
    rows = _csv(_out(run.prof_dir, "task_time"))
    assert all(is_reported_name(r["Op Name"]) for r in rows)


def test_is_reported_name_rule():
    assert not is_reported_name("_SOURCE") and not is_reported_name("_SINK")
    assert not is_reported_name("_retval_loss_0_0") and not is_reported_name("_arg_x_0_0")
    assert not is_reported_name("npu_tf_profiling_probes/fp_start")
    assert is_reported_name("dense/MatMul") and is_reported_name("gradients/_grad/x")


def test_iteration_id_is_the_step_trace_one(tmp_path):
    run = write_synthetic_prof_dir(tmp_path, 5, layered_ops(4), traced=[2, 5], with_step=True)
    write_all_reports(run.prof_dir)
    assert {r["Iteration ID"] for r in _csv(_out(run.prof_dir, "task_time"))} == {"2", "5"}
    step_rows = _csv(_out(run.prof_dir, "step_trace"))
    assert [r["Iteration ID"] for r in step_rows] == ["1", "2", "3", "4", "5"]


def test_iteration_id_follows_step_when_it_differs_from_run(tmp_path):
    # A global step that starts at 100: the step trace uses steps, so must task_time.
    prof = tmp_path / f"PROF_1_{PROF_TS}_abcdefgh"
    run = write_synthetic_prof_dir(tmp_path, 3, layered_ops(3), with_step=True, prof_dir=prof)
    trace = layout.training_trace_path(prof, 0)
    records = [json.loads(line) for line in trace.read_text().splitlines()]
    for r in records:
        r["step"] += 99
    trace.write_text("".join(json.dumps(r) + "\n" for r in records))
    write_all_reports(prof)
    assert sorted({r["Iteration ID"] for r in _csv(_out(prof, "task_time"))}) == ["100", "101", "102"]
    assert run.model_id == 1


# ----- op_summary / op_statistic --------------------------------------------------------------------
def test_op_summary_counts_times_and_ratio(tmp_path):
    ops = layered_ops(6, threads=2)
    run = write_synthetic_prof_dir(tmp_path, 6, ops, traced=[2, 3, 4])
    write_all_reports(run.prof_dir)
    summary = _csv(_out(run.prof_dir, "op_summary"))
    assert _header(_out(run.prof_dir, "op_summary")) == [
        "Device_id", "Model ID", "Op Name", "Op Type", "Count", "Total Time(us)", "Avg Time(us)", "Min Time(us)", "Max Time(us)", "Ratio(%)"
    ]
    step = {r["Iteration ID"]: int(r["Iteration Time(us)"]) for r in _csv(_out(run.prof_dir, "step_trace"))}
    traced_time_us = sum(step[str(i)] for i in (2, 3, 4))
    by_name = {r["Op Name"]: r for r in summary}
    assert set(by_name) == {op.name for op in ops}
    for op in ops:
        row = by_name[op.name]
        assert row["Op Type"] == op.op_type and row["Count"] == "3"
        assert row["Total Time(us)"] == _us(3 * op.dur_ns)
        assert row["Avg Time(us)"] == row["Min Time(us)"] == row["Max Time(us)"] == _us(op.dur_ns)
        assert float(row["Ratio(%)"]) == pytest.approx(3 * op.dur_ns / 1000 / traced_time_us * 100, abs=0.0006)
    totals = [float(r["Total Time(us)"]) for r in summary]
    assert totals == sorted(totals, reverse=True)

    statistic = {r["Op Type"]: r for r in _csv(_out(run.prof_dir, "op_statistic"))}
    assert _header(_out(run.prof_dir, "op_statistic")) == [
        "Device_id", "Model ID", "Op Type", "Count", "Total Time(us)", "Avg Time(us)", "Min Time(us)", "Max Time(us)", "Ratio(%)"
    ]
    for op_type in {op.op_type for op in ops}:
        mine = [op for op in ops if op.op_type == op_type]
        row = statistic[op_type]
        assert int(row["Count"]) == 3 * len(mine)
        assert row["Total Time(us)"] == _us(3 * sum(op.dur_ns for op in mine))
        assert row["Min Time(us)"] == _us(min(op.dur_ns for op in mine))
        assert row["Max Time(us)"] == _us(max(op.dur_ns for op in mine))


def test_op_type_falls_back_to_the_timeline_label_then_unknown(tmp_path):
    ops = [SynthOp("a/MatMul", "MatMul", 0, 1000), SynthOp("b/Weird", "", 2000, 1000)]
    run = write_synthetic_prof_dir(tmp_path, 1, ops, graph_ops=False)
    with pytest.warns(RawDataWarning, match="graph_ops_1.json: missing"):
        write_all_reports(run.prof_dir)
    types = {r["Op Name"]: r["Op Type"] for r in _csv(_out(run.prof_dir, "task_time"))}
    assert types == {"a/MatMul": "MatMul", "b/Weird": "unknown"}


@pytest.mark.parametrize(
    "label,name,expected",
    [
        ("dense/MatMul = MatMul(x, w)", "dense/MatMul", "MatMul"),
        ("Const = Const()", "Const", "Const"),
        ("n = _MklMatMul(a, b)", "n", "_MklMatMul"),
        ("void gemm<float>(...)@@dense/MatMul:MatMul#id=3#", "dense/MatMul", "MatMul"),
        ("MEMCPYHtoD", "edge_1", None),
        ("", "x", None),
    ],
)
def test_op_type_from_label(label, name, expected):
    assert op_type_from_label(label, name) == expected


def test_graph_ops_win_over_the_label(tmp_path):
    ops = [SynthOp("mm", "MatMul", 0, 1000)]
    run = write_synthetic_prof_dir(tmp_path, 1, ops)
    layout.graph_ops_path(run.prof_dir, 0, 1).write_text(json.dumps({"mm": "BatchMatMulV2"}))
    write_all_reports(run.prof_dir)
    assert _csv(_out(run.prof_dir, "task_time"))[0]["Op Type"] == "BatchMatMulV2"


# ----- timeline ---------------------------------------------------------------------------------------
def test_timeline_validates_with_step_trace_and_one_track_per_thread(tmp_path):
    ops = layered_ops(10, threads=3)
    run = write_synthetic_prof_dir(tmp_path, 4, ops, traced=[2, 3])
    paths = write_all_reports(run.prof_dir)
    (events,) = _load_timelines(paths)
    assert validate_chrome_trace(events) == []
    tasks = _tasks(events)
    assert len(tasks) == 20 == len(_csv(_out(run.prof_dir, "task_time")))
    assert {e["pid"] for e in events} == {0}
    threads = {(e["pid"], e["tid"]): e["args"]["name"] for e in events if e["name"] == "thread_name"}
    task_tracks = {threads[(e["pid"], e["tid"])] for e in tasks}
    assert task_tracks == {"CPU:0 thread 0", "CPU:0 thread 1", "CPU:0 thread 2"}
    assert {"Step Trace(Model ID:1)", "Step Trace(Model ID:1) Phases"} <= set(threads.values())
    step_names = {e["name"] for e in events if e.get("cat") == "Step Trace"}
    assert {"Iteration 1", "Iteration 4", "FP_BP Time 2"} <= step_names
    one = next(e for e in tasks if e["name"] == ops[1].name and e["args"]["Iteration ID"] == 3)
    it3 = run.iterations[2]
    assert one["args"] == {"Op Type": ops[1].op_type, "Task Type": "CPU", "Model ID": 1, "Iteration ID": 3}
    assert one["ts"] == pytest.approx((it3.fp_start_ns + ops[1].offset_ns) / 1000, abs=0.25)
    assert one["dur"] == pytest.approx(ops[1].dur_ns / 1000, abs=0.5)


def test_overlapping_ops_on_one_thread_go_to_lanes(tmp_path):
    # TF 2.x records thread 0 for every CPU op, and inter-op parallelism overlaps them.
    ops = [
        SynthOp("a", "MatMul", 0, 10_000),
        SynthOp("b", "MatMul", 2_000, 3_000),
        SynthOp("c", "Relu", 5_000, 4_000),  # touches b: same lane
        SynthOp("d", "Relu", 12_000, 1_000),
    ]
    run = write_synthetic_prof_dir(tmp_path, 2, ops)
    paths = write_all_reports(run.prof_dir)
    (events,) = _load_timelines(paths)
    assert validate_chrome_trace(events) == []
    threads = {e["tid"]: e["args"]["name"] for e in events if e["name"] == "thread_name"}
    lanes = defaultdict(set)
    for e in _tasks(events):
        lanes[threads[e["tid"]]].add(e["name"])
    assert lanes == {"CPU:0 thread 0": {"a", "d"}, "CPU:0 thread 0 #2": {"b", "c"}}
    waits = {(r["Iteration ID"], r["Op Name"]): r["Task Wait(us)"] for r in _csv(_out(run.prof_dir, "task_time"))}
    assert waits[("1", "a")] == "0.000" and waits[("1", "b")] == "0.000" and waits[("1", "c")] == "0.000"
    assert waits[("1", "d")] == "2.000"  # after a's end (10 µs), not b's or c's


def test_large_timeline_is_split_under_the_budget_and_nothing_is_lost(tmp_path, capsys):
    ops = layered_ops(200, threads=2)
    run = write_synthetic_prof_dir(tmp_path, 12, ops)
    budget_mib = 0.0625  # 64 KiB
    assert main(["report", str(run.prof_dir), "--timeline-max-mb", str(budget_mib)]) == 0
    captured = capsys.readouterr()
    parts = sorted((p for p in map(Path, captured.out.split()) if p.name.startswith("msprof_")), key=lambda p: int(p.name.split("_")[2]))
    assert len(parts) > 3
    assert [p.name for p in parts] == [f"msprof_slice_{i}_{PROF_TS}.json" for i in range(len(parts))]  # CANN's slice names
    assert "note: msprof timeline: " in captured.err and f"split into {len(parts)} files" in captured.err and "nothing left out" in captured.err
    seen = Counter()
    for path in parts:
        assert path.stat().st_size <= 64 * 1024
        events = json.loads(path.read_text())
        assert validate_chrome_trace(events) == []
        seen.update((e["name"], e["args"]["Iteration ID"]) for e in _tasks(events))
    assert sum(seen.values()) == 200 * 12 and set(seen.values()) == {1}
    # regenerating with the default budget replaces the parts with one file, and a part of the earlier naming too
    (layout.report_dir(run.prof_dir) / f"msprof_{PROF_TS}_1.json").write_text("[]\n")
    capsys.readouterr()
    assert main(["report", str(run.prof_dir)]) == 0
    assert sorted(p.name for p in layout.report_dir(run.prof_dir).glob("msprof_*")) == [f"msprof_{PROF_TS}.json"]
    assert "split into" not in capsys.readouterr().err  # (the tmp path names "split" too)


# ----- alignment helper ---------------------------------------------------------------------------------
def test_every_task_lies_within_its_iteration_window(tmp_path):
    run = write_synthetic_prof_dir(tmp_path, 6, layered_ops(30, threads=2), traced=[2, 3, 6])
    device = raw_mod.read_device(layout.device_dir(run.prof_dir, 0))
    table = load_device_tasks(device.device_dir, 0, device.info, device.trace)
    windows = task_windows(table)
    assert len(windows) == 90 and windows["inside"].all()
    first = windows[windows["iteration_id"] == 2].iloc[0]
    it2 = run.iterations[1]
    assert first["window_start_us"] == it2.run_start_us and first["window_end_us"] == it2.iteration_end_us
    # A task moved past its iteration's end is reported outside.
    moved = table.frame.copy()
    moved.loc[0, "end_ns"] = int((table.iterations.set_index("record").loc[moved.loc[0, "record"], "iteration_end_us"] + 5) * 1000)
    table.frame = moved
    assert not task_windows(table)["inside"].iloc[0]


def test_window_end_is_run_end_without_training_trace(tmp_path):
    run = write_synthetic_prof_dir(tmp_path, 2, layered_ops(3), training_trace=False)
    ddir = layout.device_dir(run.prof_dir, 0)
    table = load_device_tasks(ddir, 0, RunInfo(), None)
    windows = task_windows(table)
    assert windows["inside"].all()
    assert set(windows["window_end_us"]) == {it.run_end_us for it in run.iterations}


# ----- robustness -------------------------------------------------------------------------------------
def test_torn_last_record_keeps_every_complete_one(tmp_path):
    run = write_synthetic_prof_dir(tmp_path, 4, layered_ops(5))
    path = layout.task_trace_path(run.prof_dir, 0)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) - 37])  # killed mid-payload
    with pytest.warns(RawDataWarning, match=r"task_trace.bin: skipped 1 unusable part\(s\) \(offset \d+: incomplete last record"):
        trace = read_task_trace(path)
    assert trace.records["run"].tolist() == [1, 2, 3]
    for cut in (3, 6, 10, 20):  # torn inside the marker, the header length, the header, the payload length
        last = data.rfind(layout.TASK_MAGIC)
        path.write_bytes(data[: last + cut])
        with pytest.warns(RawDataWarning, match="incomplete last record"):
            assert read_task_trace(path).records["run"].tolist() == [1, 2, 3]
    path.write_bytes(data[: data.rfind(layout.TASK_MAGIC)] + data[data.rfind(layout.TASK_MAGIC): -37])
    with pytest.warns(RawDataWarning):
        paths = write_all_reports(run.prof_dir)
    assert {r["Iteration ID"] for r in _csv(_out(run.prof_dir, "task_time"))} == {"1", "2", "3"}
    assert any(p.name.startswith("msprof_") for p in paths)


def test_corrupt_middle_parts_are_skipped_and_reading_resumes(tmp_path):
    run = write_synthetic_prof_dir(tmp_path, 3, layered_ops(4))
    path = layout.task_trace_path(run.prof_dir, 0)
    data = path.read_bytes()
    second = data.find(layout.TASK_MAGIC, 1)
    bad_header = frame_record({"run": 9}, b"")  # no model_id
    bad_payload = frame_record({"model_id": 1, "run": 8, "step": None, "run_start_us": 1.0, "run_end_us": 2.0}, b"\xff\xff\xff")
    path.write_bytes(data[:second] + b"garbage!" + bad_header + bad_payload + data[second:])
    with pytest.warns(RawDataWarning) as caught:
        trace = read_task_trace(path)
    message = str(caught[0].message)
    assert "skipped 3 unusable part(s)" in message
    assert "8 byte(s) without a record marker" in message
    assert "'model_id' is missing" in message
    assert "payload is not a StepStats message" in message
    assert trace.records["run"].tolist() == [1, 2, 3]


def test_empty_task_trace_file_and_no_task_file(tmp_path):
    run = write_synthetic_prof_dir(tmp_path, 2, layered_ops(2))
    layout.task_trace_path(run.prof_dir, 0).write_bytes(b"")
    paths = write_all_reports(run.prof_dir)
    assert [p.name for p in paths] == [f"step_trace_{PROF_TS}.csv", f"step_trace_{PROF_TS}.json"]
    layout.task_trace_path(run.prof_dir, 0).unlink()
    assert len(write_all_reports(run.prof_dir)) == 2


def test_task_data_without_training_trace_still_reports(tmp_path):
    run = write_synthetic_prof_dir(tmp_path, 3, layered_ops(4), training_trace=False, with_step=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        paths = write_all_reports(run.prof_dir)
    assert any("no training_trace records; task reports only" in str(w.message) for w in caught)
    assert sorted(p.name.split("_")[0] for p in paths) == ["msprof", "op", "op", "task"]
    rows = _csv(_out(run.prof_dir, "task_time"))
    assert {r["Iteration ID"] for r in rows} == {"1", "2", "3"}
    (events,) = _load_timelines(paths)
    assert validate_chrome_trace(events) == []
    assert any(e["name"] == "process_name" and e["args"]["name"] == "Device 0" for e in events)
    ratios = {r["Ratio(%)"] for r in _csv(_out(run.prof_dir, "op_summary"))}
    assert "N/A" not in ratios  # run_end - run_start stands in for the Iteration Time


def test_nothing_at_all_is_still_nothing_found(tmp_path):
    prof = tmp_path / f"PROF_1_{PROF_TS}_abcdefgh"
    (layout.device_dir(prof, 0) / layout.DATA_DIR).mkdir(parents=True)
    with pytest.warns(RawDataWarning), pytest.raises(NothingFoundError):
        write_all_reports(prof)


# ----- devices, task types ---------------------------------------------------------------------------
def test_gpu_streams_host_cpu_and_communication(tmp_path):
    ops = [
        SynthOp("dense/MatMul", "MatMul", 0, 5_000, 0, GPU0),  # the launch, on the GPU device
        SynthOp("dense/MatMul", "MatMul", 1_000, 3_000, 0, GPU0 + "/stream:7"),
        SynthOp("dense/MatMul", "MatMul", 1_000, 3_000, 0, GPU0 + "/stream:all"),
        SynthOp("allreduce/NcclAllReduce", "NcclAllReduce", 6_000, 2_000, 0, GPU0 + "/stream:9"),
        SynthOp("allreduce/NcclAllReduce", "NcclAllReduce", 6_000, 2_000, 0, GPU0 + "/stream:all"),
        SynthOp("input/IteratorGetNext", "IteratorGetNext", 0, 800, 3, CPU_DEVICE),
    ]
    run = write_synthetic_prof_dir(tmp_path, 2, ops, info={"options": {"aicpu": "on"}})
    assert main(["report", str(run.prof_dir)]) == 0
    rows = _csv(_out(run.prof_dir, "task_time"))
    kinds = Counter((r["Op Name"], r["Task Type"], r["Stream ID"]) for r in rows if r["Iteration ID"] == "1")
    assert kinds == {
        ("dense/MatMul", "GPU kernel", "0"): 1,
        ("dense/MatMul", "GPU kernel", "7"): 1,
        ("allreduce/NcclAllReduce", "communication", "9"): 1,
        ("input/IteratorGetNext", "host CPU", "3"): 1,
    }
    paths = write_all_reports(run.prof_dir)
    assert any("4 GPU '/stream:all' copies of per-stream kernels" in n for n in paths.notes)
    (events,) = _load_timelines(paths)
    assert validate_chrome_trace(events) == []
    tracks = {e["args"]["name"] for e in events if e["name"] == "thread_name"}
    assert {"GPU:0 thread 0", "GPU:0/stream:7", "GPU:0/stream:9", "CPU:0 thread 3"} <= tracks


def test_host_cpu_ops_need_aicpu_on(tmp_path):
    ops = [SynthOp("k", "MatMul", 0, 1_000, 0, GPU0 + "/stream:1"), SynthOp("h", "Cast", 0, 500, 0, CPU_DEVICE)]
    run = write_synthetic_prof_dir(tmp_path, 1, ops, info={"options": {"task_trace": "on", "aicpu": "off"}})
    paths = write_all_reports(run.prof_dir)
    assert [r["Op Name"] for r in _csv(_out(run.prof_dir, "task_time"))] == ["k"]
    assert any("1 host CPU ops (aicpu is not 'on')" in n for n in paths.notes)


def test_two_devices_and_two_models_share_one_set_of_files(tmp_path):
    prof = tmp_path / f"PROF_7_{PROF_TS}_abcdefgh"
    write_synthetic_prof_dir(tmp_path, 3, layered_ops(4), device_id=0, prof_dir=prof)
    write_synthetic_prof_dir(tmp_path, 2, layered_ops(3), device_id=1, prof_dir=prof)
    write_synthetic_prof_dir(tmp_path, 2, layered_ops(2), device_id=1, model_id=2, prof_dir=prof, t0_ns=1_700_000_100_000_000_000)
    paths = write_all_reports(prof)
    rows = _csv(_out(prof, "task_time"))
    assert Counter((r["Device_id"], r["Model ID"]) for r in rows) == {("0", "1"): 12, ("1", "1"): 6, ("1", "2"): 4}
    summary = _csv(_out(prof, "op_summary"))
    assert Counter((r["Device_id"], r["Model ID"]) for r in summary) == {("0", "1"): 4, ("1", "1"): 3, ("1", "2"): 2}
    (events,) = _load_timelines(paths)
    assert validate_chrome_trace(events) == []
    assert {e["pid"] for e in _tasks(events)} == {0, 1}
    assert sorted(e["args"]["name"] for e in events if e["name"] == "process_name") == ["Device 0", "Device 1"]


def test_communication_op_types():
    from npu_tf_profiling.reports.task.classify import is_communication_type

    for op_type in ("CollectiveReduceV2", "NcclAllReduce", "HorovodAllreduce", "HcomAllReduce", "CollectiveBcastSend"):
        assert is_communication_type(op_type)
    for op_type in ("MatMul", "AllToAllLike", "Const"):
        assert not is_communication_type(op_type)


# ----- no TensorFlow in the reports room -------------------------------------------------------------------
def test_task_reports_never_import_tensorflow(tmp_path):
    run = write_synthetic_prof_dir(tmp_path, 3, layered_ops(5), traced=[2])
    code = f"""
import npu_tf_profiling.reports
from npu_tf_profiling.reports import write_all_reports, read_task_trace, load_device_tasks, task_windows
import npu_tf_profiling.reports.task.step_stats, npu_tf_profiling.reports.task.records, npu_tf_profiling.reports.task.table, npu_tf_profiling.reports.task.op_summary
import npu_tf_profiling.reports.task.timeline, npu_tf_profiling.reports.task.files, npu_tf_profiling.testing.task_synthetic
import npu_tf_profiling.config.schedule
from npu_tf_profiling.cli import main
assert main(["report", {str(run.prof_dir)!r}]) == 0
"""
    run_without_tensorflow(code, tmp_path)
    assert (layout.report_dir(run.prof_dir) / f"task_time_{PROF_TS}.csv").is_file()


def test_a_window_never_reached_is_a_note_not_silence(tmp_path):
    run = write_synthetic_prof_dir(tmp_path, 6, layered_ops(3), traced=[], info={"device_id": 0, "options": {"task_trace": "on", "training_trace": "on"}})
    paths = write_all_reports(run.prof_dir)
    assert [p.name for p in paths] == [f"step_trace_{PROF_TS}.csv", f"step_trace_{PROF_TS}.json"]
    assert paths.notes == [
        "device 0: task_trace is on but no iteration was traced (no task_trace.bin data; "
        "task_trace window (default): iterations 11-15; the step trace has 6 iteration(s))"
    ]
