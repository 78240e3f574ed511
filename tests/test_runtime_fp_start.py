"""FP Start: its own clock read only where the first forward op waits on more than the batch.

Where the first layer reads just the batch and its weights, it may start the moment the
batch's end is stamped, and its weight reads already wait on that stamp: FP Start is that
stamp, with no second clock read on the step's path.
"""
from __future__ import annotations

import tensorflow.compat.v1 as tf

from tests.helpers.models import dense, input_fn, profiling_config, session_mlp
from tests.helpers.trace_files import raw_records

PROBES = "npu_tf_profiling_probes"


def _timestamps(graph: tf.Graph) -> set[str]:
    return {op.name.split("/", 1)[1] for op in graph.get_operations() if op.name.startswith(PROBES) and op.type == "Timestamp"}


def _train(graph: tf.Graph, train_op, init, output) -> list[dict]:
    with tf.Session(graph=graph, config=profiling_config(output)) as sess:
        sess.run(init)
        for _ in range(5):
            sess.run(train_op)
    return raw_records(output)


def test_a_first_layer_on_the_batch_alone_starts_at_the_batch_end(tmp_path) -> None:
    graph = tf.Graph()
    train_op, _, init, _ = session_mlp(graph)
    records = _train(graph, train_op, init, tmp_path)
    assert "fp_start" not in _timestamps(graph) and "get_next_end" in _timestamps(graph)
    kernel_read = graph.get_operation_by_name("dense/MatMul").inputs[1].op
    assert f"{PROBES}/get_next_end" in [c.name for c in kernel_read.control_inputs]
    assert len(records) == 5
    for record in records:
        (_, batch_end), = record["get_next"]
        assert record["fp_start"] == batch_end < record["bp_end"] < record["iteration_end"], record


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
