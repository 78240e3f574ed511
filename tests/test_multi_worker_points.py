"""Trace points in the graphs multi-worker training builds (no cluster needed: graph level).

* MultiWorkerMirroredStrategy's Estimator graph: gradients packed into one
  CollectiveReduceV2, and the train op is the global-step AssignAddVariableOp,
  which is read back inside the graph (a consumer the step never fetches).
* Horovod (not installed): HorovodAllreduce / HorovodGroupedAllreduce /
  HorovodAllgather nodes, made by retyping Identity placeholders.
"""
from __future__ import annotations

import pytest
import tensorflow as tf

from npu_tf_profiling.graph_points import GraphIndex, find_trace_points
from tests.helpers import graphs_for_tests as graphs

tf1 = tf.compat.v1
pytestmark = pytest.mark.filterwarnings("ignore:.*is deprecated:UserWarning")


def mwms_like_graph() -> tf.Graph:
    """The shape of an MWMS Estimator training graph: concat -> CollectiveReduceV2 -> split,
    per-variable updates, then the global-step increment (the train op) and a read of it."""
    graph = tf.Graph()
    with graph.as_default():
        features, labels = graphs.dataset_batch()
        loss = tf1.losses.sparse_softmax_cross_entropy(labels, graphs._mlp_logits(features))
        global_step = tf1.train.get_or_create_global_step()
        optimizer = tf1.train.GradientDescentOptimizer(0.1)
        grads_and_vars = optimizer.compute_gradients(loss)
        flat = [tf.reshape(g, [-1]) for g, _ in grads_and_vars]
        packed = tf.concat(flat, 0, name="concat")
        reduced = tf.raw_ops.CollectiveReduceV2(
            input=packed, group_size=2, group_key=1, instance_key=1, ordering_token=[],
            merge_op="Add", final_op="Div", name="CollectiveReduceV2")
        pieces = tf.split(reduced, [int(f.shape[0]) for f in flat])
        pairs = [(tf.reshape(p, v.shape), v) for p, (_, v) in zip(pieces, grads_and_vars)]
        update = optimizer.apply_gradients(pairs)
        with tf.control_dependencies([update]):
            increment = tf.raw_ops.AssignAddVariableOp(
                resource=global_step.handle, value=tf.constant(1, tf.int64), name="update_0_5/AssignAddVariableOp")
        with tf.control_dependencies([increment]):
            tf.raw_ops.ReadVariableOp(resource=global_step.handle, dtype=tf.int64, name="update_0_5/ReadVariableOp")
        graph.add_to_collection(tf1.GraphKeys.TRAIN_OP, increment)
    return graph


def test_mwms_train_op_read_back_stays_the_iteration_end() -> None:
    graph = mwms_like_graph()
    points = find_trace_points(graph)
    assert points.iteration_end == "update_0_5/AssignAddVariableOp", points.reasons
    assert points.all_reduce == (("CollectiveReduceV2",),)
    assert points.bp == "concat"
    assert points.global_step == "global_step"
    assert points.fp == "hidden/MatMul"
    on_path = GraphIndex.from_graph(graph).ancestors([points.iteration_end])
    assert {"CollectiveReduceV2", "concat", "hidden/MatMul"} <= set(on_path)


def _horovod_graph_def(kind: str) -> tf1.GraphDef:
    """hvd.DistributedOptimizer's shape: one collective per gradient (allreduce), one grouped
    op for all gradients (grouped), or an allgather for the embedding-like first layer."""
    graph = tf.Graph()
    with graph.as_default():
        features, labels = graphs.dataset_batch()
        loss = tf1.losses.sparse_softmax_cross_entropy(labels, graphs._mlp_logits(features))
        optimizer = tf1.train.GradientDescentOptimizer(0.1)
        grads_and_vars = optimizer.compute_gradients(loss)
        with tf1.name_scope("DistributedGradientDescentOptimizer_Allreduce"):
            if kind == "grouped":
                outs = tf.identity_n([g for g, _ in grads_and_vars], name="HorovodGroupedAllreduce")
            else:
                outs = [tf.identity(g, name=f"{'HorovodAllgather' if kind == 'allgather' and k == 0 else 'HorovodAllreduce'}_{k}")
                        for k, (g, _) in enumerate(grads_and_vars)]
        averaged = [(tf.math.truediv(o, 2.0), v) for o, (_, v) in zip(outs, grads_and_vars)]
        optimizer.apply_gradients(averaged, global_step=tf1.train.get_or_create_global_step())
    graph_def = graph.as_graph_def()
    for node in graph_def.node:
        leaf = node.name.rsplit("/", 1)[-1]
        if node.name.startswith("DistributedGradientDescentOptimizer_Allreduce/") and leaf.startswith("Horovod"):
            node.op = leaf.split("_")[0]
    return graph_def


@pytest.mark.parametrize("kind", ["grouped", "allgather"])
def test_horovod_grouped_allreduce_and_allgather_are_communication(kind: str) -> None:
    graph_def = _horovod_graph_def(kind)
    types = {n.op for n in graph_def.node}
    points = find_trace_points(graph_def)
    if kind == "grouped":
        assert "HorovodGroupedAllreduce" in types
        assert points.all_reduce == (("DistributedGradientDescentOptimizer_Allreduce/HorovodGroupedAllreduce",),)
    else:
        assert {"HorovodAllgather", "HorovodAllreduce"} <= types
        (group,) = points.all_reduce
        assert group[0] == "DistributedGradientDescentOptimizer_Allreduce/HorovodAllgather_0"
        assert len(group) == 4
    assert points.iteration_end == "GradientDescent"
    assert points.fp == "hidden/MatMul"
