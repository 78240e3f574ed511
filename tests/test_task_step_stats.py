"""StepStats decoding without TensorFlow matches TensorFlow's own classes, and the task
reports built from a real tf.compat.v1 Session FULL_TRACE run (TensorFlow in the test only)."""
from __future__ import annotations

import csv
import json
import time
from collections import Counter

import numpy as np
import pytest

tf = pytest.importorskip("tensorflow")
from tensorflow.core.framework import step_stats_pb2  # noqa: E402

from npu_tf_profiling.raw_format import layout  # noqa: E402
from npu_tf_profiling.reports.step import records as raw_mod  # noqa: E402
from npu_tf_profiling.reports.task import step_stats  # noqa: E402
from npu_tf_profiling.reports.encoders.chrome_trace import validate_chrome_trace  # noqa: E402
from npu_tf_profiling.raw_format.task_record import frame_task_record  # noqa: E402
from npu_tf_profiling.reports.task.classify import is_reported_name  # noqa: E402
from npu_tf_profiling.reports.task.table import load_device_tasks, task_windows  # noqa: E402
from npu_tf_profiling.reports.writer import write_all_reports  # noqa: E402

NODE_FIELDS = [name for name, _, _ in step_stats._NODE_FIELDS]


def _assert_same(ours, theirs) -> None:
    assert len(ours.dev_stats) == len(theirs.dev_stats)
    for dev_o, dev_t in zip(ours.dev_stats, theirs.dev_stats):
        assert dev_o.device == dev_t.device
        assert dict(dev_o.thread_names) == dict(dev_t.thread_names)
        assert len(dev_o.node_stats) == len(dev_t.node_stats)
        for node_o, node_t in zip(dev_o.node_stats, dev_t.node_stats):
            for name in NODE_FIELDS:
                assert getattr(node_o, name) == getattr(node_t, name), name


def _full_tf_step_stats():
    ss = step_stats_pb2.StepStats()
    for d, device in enumerate(["/job:localhost/replica:0/task:0/device:CPU:0", "/device:GPU:0/stream:7"]):
        dev = ss.dev_stats.add(device=device)
        dev.thread_names[3] = "inter_op_3"
        dev.thread_names[4000000000] = "big id"
        for i in range(5):
            node = dev.node_stats.add(
                node_name=f"n{d}_{i}", all_start_micros=1_796_028_028_485_895 + i, op_start_rel_micros=1, op_end_rel_micros=2,
                all_end_rel_micros=3, timeline_label=f"n{d}_{i} = MatMul(a, b)", scheduled_micros=-5, thread_id=4000000000 if i == 4 else i,
                all_start_nanos=1_796_028_028_485_895_205 + i, op_start_rel_nanos=135, op_end_rel_nanos=189, all_end_rel_nanos=2_511,
                scheduled_nanos=6_693_853_335_988_492_248,
            )
            # fields the reports' descriptor does not declare: skipped when parsing
            node.memory.add(allocator_name="cpu", total_bytes=64, peak_bytes=64, live_bytes=8)
            out = node.output.add(slot=0)
            out.tensor_description.dtype = 1
            out.tensor_description.allocation_description.requested_bytes = 8
            out.tensor_description.allocation_description.allocator_name = "mklcpu"
            node.referenced_tensor.add(requested_bytes=4, allocator_name="cpu")
            node.memory_stats.persistent_memory_size = 8
    return ss


def test_every_field_decodes_like_tensorflow_including_unknown_fields():
    theirs = _full_tf_step_stats()
    payload = theirs.SerializeToString()
    ours = step_stats.parse_step_stats(payload)
    _assert_same(ours, theirs)
    # and the other way round: what we serialise, TensorFlow reads
    back = step_stats_pb2.StepStats()
    back.ParseFromString(ours.SerializeToString())
    _assert_same(ours, back)
    assert back.dev_stats[0].node_stats[0].memory_stats.persistent_memory_size == 8  # unknown fields kept


def test_device_nodes_prefers_nanos_and_falls_back_to_micros():
    ss = step_stats_pb2.StepStats()
    dev = ss.dev_stats.add(device="/device:CPU:0")
    dev.node_stats.add(node_name="with_nanos", all_start_micros=1_000, all_end_rel_micros=2, all_start_nanos=1_000_123, all_end_rel_nanos=2_345, thread_id=5)
    dev.node_stats.add(node_name="micros_only", all_start_micros=2_000, all_end_rel_micros=7, thread_id=6)
    codes: dict[str, int] = {}
    cols = step_stats.device_nodes(step_stats.parse_step_stats(ss.SerializeToString()).dev_stats[0], codes)
    assert codes == {"with_nanos": 0, "micros_only": 1}
    assert cols.start_ns.tolist() == [1_000_123, 2_000_000]
    assert cols.end_ns.tolist() == [1_002_468, 2_007_000]
    assert cols.thread_id.tolist() == [5, 6] and cols.new_names == [(0, 0), (1, 1)]


# ----- a real session ---------------------------------------------------------------------------------
def _small_cnn():
    graph = tf.Graph()
    with graph.as_default():
        tf.compat.v1.set_random_seed(1)
        x = tf.compat.v1.placeholder(tf.float32, [8, 12, 12, 1], name="x")
        y = tf.compat.v1.placeholder(tf.int32, [8], name="y")
        kernel = tf.compat.v1.get_variable("conv/kernel", [3, 3, 1, 4])
        conv = tf.nn.relu(tf.nn.conv2d(x, kernel, 1, "VALID", name="conv/Conv2D"), name="conv/Relu")
        flat = tf.reshape(conv, [8, -1], name="flat")
        weights = tf.compat.v1.get_variable("dense/kernel", [10 * 10 * 4, 3])
        logits = tf.matmul(flat, weights, name="dense/MatMul")
        loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits), name="loss")
        train = tf.compat.v1.train.AdamOptimizer(0.01).minimize(loss, name="train")
        init = tf.compat.v1.global_variables_initializer()
    return graph, x, y, loss, train, init


def test_reports_from_a_real_full_trace_session(tmp_path):
    graph, x, y, loss, train, init = _small_cnn()
    prof = tmp_path / "PROF_1_20240102030405_abcdefgh"
    data_dir = layout.device_dir(prof, 0) / layout.DATA_DIR
    data_dir.mkdir(parents=True)
    (layout.device_dir(prof, 0) / layout.INFO_FILE).write_text(json.dumps({"device_id": 0, "options": {"task_trace": "on"}}))
    layout.graph_ops_path(prof, 0, 1).write_text(json.dumps({op.name: op.type for op in graph.get_operations()}))
    rng = np.random.default_rng(0)
    feed = {x: rng.normal(size=(8, 12, 12, 1)).astype(np.float32), y: rng.integers(0, 3, 8)}
    traced = {3, 4, 5}
    executed: Counter = Counter()
    per_iteration: dict[int, int] = {}
    options = tf.compat.v1.RunOptions(trace_level=tf.compat.v1.RunOptions.FULL_TRACE)
    with tf.compat.v1.Session(graph=graph) as sess, open(data_dir / layout.TASK_TRACE_FILE, "wb") as tasks, open(
        data_dir / layout.TRAINING_TRACE_FILE, "w"
    ) as trace:
        sess.run(init)
        for run in range(1, 8):
            metadata = tf.compat.v1.RunMetadata()
            start_us = time.time() * 1e6
            if run in traced:
                sess.run([train, loss], feed, options=options, run_metadata=metadata)
            else:
                sess.run([train, loss], feed)
            end_us = time.time() * 1e6
            trace.write(json.dumps({"model_id": 1, "run": run, "step": None, "get_next": [], "fp_start": None, "bp_end": None,
                                    "reduce": [], "iteration_end": end_us}) + "\n")
            if run in traced:
                header = {"model_id": 1, "run": run, "step": None, "run_start_us": start_us, "run_end_us": end_us}
                tasks.write(frame_task_record(header, metadata.step_stats.SerializeToString()))
                names = [n.node_name for d in metadata.step_stats.dev_stats for n in d.node_stats if is_reported_name(n.node_name)]
                executed.update(names)
                per_iteration[run] = len(names)
    paths = write_all_reports(prof)
    out = layout.report_dir(prof)
    with open(out / "task_time_20240102030405.csv", newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == sum(executed.values()) and len(rows) > 20
    assert Counter(int(r["Iteration ID"]) for r in rows) == per_iteration
    assert all(r["Op Type"] != "unknown" and r["Task Type"] == "CPU" for r in rows)
    types = {r["Op Name"]: r["Op Type"] for r in rows}
    # Grappler rewrites the graph (fusions, constant folding): names missing from graph_ops take the label's type.
    assert any("Conv2D" in t for t in types.values()) and any(t.startswith("ResourceApplyAdam") for t in types.values())
    with open(out / "op_summary_20240102030405.csv", newline="") as handle:
        summary = {r["Op Name"]: int(r["Count"]) for r in csv.DictReader(handle)}
    assert summary == dict(executed)
    (timeline,) = [p for p in paths if p.name.startswith("msprof_")]
    events = json.loads(timeline.read_text())
    assert validate_chrome_trace(events) == []
    assert sum(1 for e in events if e.get("cat") == "Task") == len(rows)
    # one clock: every task lies within its iteration's [run start, iteration end]
    device = raw_mod.read_device(layout.device_dir(prof, 0))
    windows = task_windows(load_device_tasks(device.device_dir, 0, device.info, device.trace))
    assert len(windows) == len(rows)
    outside = windows[~windows["inside"]]
    assert outside.empty, outside.head().to_string()
