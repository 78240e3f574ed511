"""FP Start: where the first forward op waits on the batch alone, after its weight reads; else before the op.

Where the first layer reads just the batch and its weights, its weight reads wait on the
batch's end stamp, and FP Start is a stamp taken after those reads, with no control input on
the layer itself (Grappler can still fuse it): the moment the layer becomes ready. It is
never before the batch's end. (It was the batch's end stamp itself once, one op fewer, but
read 14-20 µs early: the reads and the executor's dispatch, tests/test_tf2_accuracy.py.)
"""
from __future__ import annotations

import tensorflow.compat.v1 as tf

from tests.models import dense, input_fn, profiling_config, session_mlp
from tests.trace_files import raw_records

PROBES = "npu_tf_profiling_probes"


def _timestamps(graph: tf.Graph) -> set[str]:
    return {op.name.split("/", 1)[1] for op in graph.get_operations() if op.name.startswith(PROBES) and op.type == "Timestamp"}


def _train(graph: tf.Graph, train_op, init, output) -> list[dict]:
    with tf.Session(graph=graph, config=profiling_config(output)) as sess:
        sess.run(init)
        for _ in range(5):
            sess.run(train_op)
    return raw_records(output)


def test_a_first_layer_on_the_batch_alone_starts_after_its_weight_reads(tmp_path) -> None:
    graph = tf.Graph()
    train_op, _, init, _ = session_mlp(graph)
    records = _train(graph, train_op, init, tmp_path)
    assert {"fp_start", "get_next_end"} <= _timestamps(graph)
    matmul = graph.get_operation_by_name("dense/MatMul")
    kernel_read = matmul.inputs[1].op
    assert f"{PROBES}/get_next_end" in [c.name for c in kernel_read.control_inputs]
    assert not any(c.name.startswith(PROBES) for c in matmul.control_inputs)  # the layer itself is untouched
    fp_stamp = graph.get_operation_by_name(f"{PROBES}/fp_start")
    waits = {t.op for t in fp_stamp.inputs} | set(fp_stamp.control_inputs)
    for _ in range(3):  # through the probes' gate ops, to the model ops the stamp waits on
        waits |= {parent for op in list(waits) for parent in [t.op for t in op.inputs] + list(op.control_inputs)}
    assert kernel_read in waits
    assert len(records) == 5
    for record in records:
        (_, batch_end), = record["get_next"]
        assert batch_end <= record["fp_start"] < record["bp_end"] < record["iteration_end"], record


def test_a_first_op_with_another_input_gets_its_own_stamp(tmp_path) -> None:
    graph = tf.Graph()
    with graph.as_default():
        features, labels = tf.data.make_one_shot_iterator(input_fn()()).get_next()
        # The first forward op also waits on a value computed in the step (not a weight read).
        jitter = tf.random.uniform([], 0.9, 1.1, seed=3, name="jitter")
        logits = dense(features["x"] * jitter, 4, "logits", seed=4)
        loss = tf.losses.sparse_softmax_cross_entropy(labels=labels, logits=logits)
        train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=tf.train.get_or_create_global_step())
        init = tf.global_variables_initializer()
    records = _train(graph, train_op, init, tmp_path)
    assert {"get_next_end", "fp_start"} <= _timestamps(graph)
    assert len(records) == 5
    for record in records:
        (_, batch_end), = record["get_next"]
        assert batch_end <= record["fp_start"] < record["bp_end"], record
