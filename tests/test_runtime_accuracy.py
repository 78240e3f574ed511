"""The probes agree with TensorFlow's own step stats (FULL_TRACE on the same iterations): p95 within 20 µs,
except GetNext End (median within 100 µs, p95 within 250 µs) and FP Start (median within 20 µs, p95 within 50 µs).

GetNext End is the loosest: IteratorGetNext is an async kernel, and TensorFlow hands every
successor of an async op to its thread pool, so no stamp can run before a pool thread picks it
up. The stamp is made GetNext's only ready successor, so it is the first to run, but the
pickup's tail stays: `benchmarks/getnext_floor.py` measures, on plain sessions, how late the
model's own first consumer of the batch starts after GetNext's end (p95 34-55 µs on a tiny
model, 120-132 µs on a CNN, over 1 ms on an MLP whose step starts with hundreds of root ops),
and the stamp's error follows it (the goal of p95 <= 50 µs is met on the tiny model, in two runs of three;
the bounds here guard against regressions). Iteration End
is stamped when everything the train op waits on has finished, so it is compared with the
end of the last model op the train op (transitively) waits on.
100 iterations keep the p95 estimate stable. On a machine busier than its CPU count (load
average), a thread preempted between a stamp and its op, or a thread wakeup waiting for a CPU,
lands in the tail whatever the probes do: on a run during which other processes took CPU
(`tests/helpers/host_busy.py` measures it; the load average cannot) the p95 must stay within
LOADED_P95_FACTOR times the limits (the medians are held to them always).
"""
from __future__ import annotations

import json

import numpy as np
import pytest
import tensorflow.compat.v1 as tf
from tensorflow.core.protobuf import rewriter_config_pb2

from npu_tf_profiling.config.session_proto import write_request
from tests.helpers.host_busy import OthersCpu
from tests.helpers.models import session_mlp
from tests.helpers.trace_files import only_prof_dir, raw_records

pytestmark = pytest.mark.timing

ITERATIONS = 100
# TensorFlow's executor treats every kernel as expensive (dispatched to the thread pool) until
# its measured cost has decayed, about 100 runs; steady state, where the stamps run inline, is after.
WARMUP = 120
TOLERANCE_US = 20.0
# FP Start's p95 on the 2-core VM with no other job running: 10-39 µs in 12 runs of this test, 2026-12-07, at
# e376b33 and after alike (medians 9-14 µs, still held to TOLERANCE_US). Its stamp and the first forward op wait for a pool
# thread as GetNext End's do, so it has a pickup tail too; 20 µs failed 4 of those 12 runs.
FP_START_P95_US = 50.0
GET_NEXT_END_MEDIAN_US = 100.0
GET_NEXT_END_P95_US = 250.0
LOADED_P95_FACTOR = 4.0


def _op_times(run_metadata: tf.RunMetadata) -> dict[str, tuple[float, float]]:
    """op name -> (start, end) in µs since the epoch, from the CPU device's step stats."""
    times: dict[str, tuple[float, float]] = {}
    for device in run_metadata.step_stats.dev_stats:
        for node in device.node_stats:
            name = node.node_name.split(":")[0]
            start = float(node.all_start_micros)
            times[name] = (start, start + float(node.all_end_rel_micros))
    return times


def _model_ancestors(op: tf.Operation) -> set[str]:
    """The names of the model ops `op` waits on, transitively (the package's own ops left out)."""
    seen: set[str] = set()
    stack = [t.op for t in op.inputs] + list(op.control_inputs)
    while stack:
        item = stack.pop()
        if item.name in seen or item.name.startswith("npu_tf_profiling_probes"):
            continue
        seen.add(item.name)
        stack.extend([t.op for t in item.inputs] + list(item.control_inputs))
    return seen


def test_probe_times_match_step_stats(tmp_path) -> None:
    graph = tf.Graph()
    train_op, loss, init, _ = session_mlp(graph, batch=64, extra_flops=1)
    config = tf.ConfigProto()
    # As the Ascend scripts do: no Grappler op fusion, so every op the points name shows in the step stats.
    config.graph_options.rewrite_options.remapping = rewriter_config_pb2.RewriterConfig.OFF
    write_request(config, True, json.dumps({"output": str(tmp_path), "training_trace": "on"}))
    stats = []
    with tf.Session(graph=graph, config=config) as sess, OthersCpu() as others:
        sess.run(init)
        for _ in range(WARMUP):
            sess.run(train_op)
        for _ in range(ITERATIONS):
            metadata = tf.RunMetadata()
            sess.run([train_op, loss], options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE), run_metadata=metadata)
            stats.append(_op_times(metadata))
    records = raw_records(tmp_path)
    assert len(records) == WARMUP + ITERATIONS
    records = records[WARMUP:]
    points = json.loads(next(only_prof_dir(tmp_path).glob("device_*/info.json")).read_text())["models"]["1"]
    bp_ops = sorted({t.split(":")[0] for t in points["bp_inputs"]})
    waited = _model_ancestors(graph.get_operation_by_name(points["iteration_end"]))
    errors: dict[str, list[float]] = {"fp_start": [], "bp_end": [], "get_next_start": [], "get_next_end": [], "iteration_end": []}
    for record, times in zip(records, stats):
        errors["fp_start"].append(abs(record["fp_start"] - times[points["fp"]][0]))
        errors["bp_end"].append(abs(record["bp_end"] - max(times[op][1] for op in bp_ops)))
        start, end = record["get_next"][0]
        errors["get_next_start"].append(abs(start - times[points["get_next"][0]][0]))
        errors["get_next_end"].append(abs(end - times[points["get_next"][0]][1]))
        errors["iteration_end"].append(abs(record["iteration_end"] - max(times[op][1] for op in waited if op in times)))
    p95 = {name: float(np.percentile(values, 95)) for name, values in errors.items()}
    medians = {name: float(np.median(values)) for name, values in errors.items()}
    print("|probe - step stats| (us): p95", p95, "median", medians, others)
    limits = {name: {"get_next_end": GET_NEXT_END_P95_US, "fp_start": FP_START_P95_US}.get(name, TOLERANCE_US) for name in p95}
    median_limits = {**limits, "get_next_end": GET_NEXT_END_MEDIAN_US, "fp_start": TOLERANCE_US}
    assert all(medians[name] <= median_limits[name] for name in medians), medians
    assert all(p95[name] <= (1 if others.quiet else LOADED_P95_FACTOR) * limits[name] for name in p95), (p95, others)
