"""fp/bp/get_next/all-reduce discovery on real TensorFlow graphs.

Every graph is built in graph mode by tests/helpers/graphs_for_tests.py; each test
asserts the chosen ops by name and the reason given for them, and, where a
naive rule would pick something else (labels before features, a test tower
built first, a v1 loop accumulator created last), checks that the trap is
really in the graph so the test can fail.
"""
from __future__ import annotations

import json

import pytest
import tensorflow as tf

from npu_tf_profiling.graph_points import GraphIndex, TracePoints, TracePointsError, find_trace_points
from npu_tf_profiling.graph_points.optypes import is_gradient_name
from tests.helpers import graphs_for_tests as graphs

pytestmark = pytest.mark.filterwarnings("ignore:.*is deprecated:UserWarning")

MLP_BP_INPUTS = {
    "gradients/hidden/MatMul_grad/MatMul_1:0",
    "gradients/hidden/BiasAdd_grad/BiasAddGrad:0",
    "gradients/logits/MatMul_grad/MatMul_1:0",
    "gradients/logits/BiasAdd_grad/BiasAddGrad:0",
}


def reason(points: TracePoints, prefix: str) -> str:
    """The one reason starting with ``prefix`` (e.g. "fp = ")."""
    found = [r for r in points.reasons if r.startswith(prefix)]
    assert len(found) == 1, (prefix, points.reasons)
    return found[0]


def assert_on_training_path(graph: tf.Graph, points: TracePoints) -> None:
    """What the runtime relies on: every point is an ancestor of iteration_end."""
    on_path = GraphIndex.from_graph(graph).ancestors([points.iteration_end])
    for name in (points.fp, points.bp, *points.get_next, *(op for g in points.all_reduce for op in g)):
        assert name in on_path, name
    for tensor in points.bp_inputs:
        assert tensor.rsplit(":", 1)[0] in on_path, tensor


# --------------------------------------------------------------- v1 layers
@pytest.mark.parametrize("optimizer", ["sgd", "momentum", "adam"])
def test_mlp(optimizer: str) -> None:
    graph = graphs.mlp_graph(optimizer)
    points = find_trace_points(graph)
    assert points.is_training
    assert points.fp == "hidden/MatMul"
    assert reason(points, "fp = ").startswith("fp = hidden/MatMul: first compute op consuming IteratorGetNext:0")
    assert points.bp == "gradients/hidden/MatMul_grad/MatMul_1"
    assert "the one for hidden/kernel, the variable the forward pass uses first" in reason(points, "bp = ")
    assert set(points.bp_inputs) == MLP_BP_INPUTS
    assert points.get_next == ("IteratorGetNext",)
    assert points.iteration_end == graphs.OPTIMIZER_TRAIN_OP[optimizer]
    assert reason(points, "iteration_end = ").endswith("the graph's train_op collection")
    assert points.global_step == "global_step"
    assert points.all_reduce == ()
    assert points.warnings == ()
    assert_on_training_path(graph, points)


@pytest.mark.parametrize("optimizer", ["sgd", "momentum", "adam"])
def test_graph_def_without_collections_finds_the_same_train_op(optimizer: str) -> None:
    graph = graphs.mlp_graph(optimizer)
    from_graph = find_trace_points(graph)
    from_graph_def = find_trace_points(graph.as_graph_def())
    assert from_graph_def.iteration_end == from_graph.iteration_end
    assert "the sink op that runs the most optimizer updates (4 of 4)" in reason(from_graph_def, "iteration_end = ")
    assert (from_graph_def.fp, from_graph_def.bp, from_graph_def.get_next) == (
        from_graph.fp, from_graph.bp, from_graph.get_next)


@pytest.mark.parametrize("optimizer", ["sgd", "momentum", "adam"])
def test_cnn(optimizer: str) -> None:
    graph = graphs.cnn_graph(optimizer)
    index = GraphIndex.from_graph(graph)
    # The trap: a StridedSlice of the data's Shape is the first op downstream of the data.
    (slice_op,) = index.consumers("batch_shape")
    assert index.op_type(slice_op) == "StridedSlice"
    assert index.topo_pos[index.id_of(slice_op)] < index.topo_pos[index.id_of("conv/Conv2D")]
    points = find_trace_points(graph)
    assert points.fp == "conv/Conv2D"
    assert reason(points, "fp = ").startswith("fp = conv/Conv2D: first compute op consuming IteratorGetNext:0 (via Reshape)")
    assert points.bp == "gradients/conv/Conv2D_grad/Conv2DBackpropFilter"
    assert "the one for conv/kernel" in reason(points, "bp = ")
    assert points.get_next == ("IteratorGetNext",)
    assert points.iteration_end == graphs.OPTIMIZER_TRAIN_OP[optimizer]
    assert_on_training_path(graph, points)


def test_feed_dict_model_lists_batch_placeholders_only() -> None:
    graph = graphs.feed_dict_graph()
    points = find_trace_points(graph)
    assert points.get_next == ("x", "y")
    assert points.fp == "hidden/MatMul"
    assert reason(points, "fp = ").startswith("fp = hidden/MatMul: first compute op consuming x:0")
    assert points.bp == "gradients/hidden/MatMul_grad/MatMul_1"
    assert points.iteration_end == "train"
    get_next = reason(points, "get_next = ")
    assert "scalar or bool Placeholders are settings, not batches: keep_prob" in get_next
    assert "do not feed the loss of the training step: learning_rate" in get_next
    assert "is_training" not in points.get_next  # a PlaceholderWithDefault flag
    assert points.global_step is None
    assert_on_training_path(graph, points)


def test_labels_before_features_iterator() -> None:
    graph = graphs.labels_first_graph()
    index = GraphIndex.from_graph(graph)
    # The trap: output 0 is the labels, whose first consumer (one_hot) comes
    # before any layer in graph order.
    assert index.consumers("IteratorGetNext")[0] == "one_hot"
    assert index.inputs("one_hot")[0] == "IteratorGetNext:0"
    points = find_trace_points(graph)
    assert points.fp == "conv/Conv2D"
    fp_reason = reason(points, "fp = ")
    assert fp_reason.startswith("fp = conv/Conv2D: first compute op consuming IteratorGetNext:1 (via Reshape)")
    assert "IteratorGetNext:1 reaches the loss through the most compute ops" in fp_reason
    assert points.bp == "gradients/conv/Conv2D_grad/Conv2DBackpropFilter"
    assert points.get_next == ("IteratorGetNext",)


def test_labels_placeholder_created_before_features() -> None:
    graph = graphs.labels_first_graph(use_placeholders=True)
    points = find_trace_points(graph)
    assert points.get_next == ("labels", "features")
    assert points.fp == "conv/Conv2D"
    assert reason(points, "fp = ").startswith("fp = conv/Conv2D: first compute op consuming features:0")
    assert points.bp == "gradients/conv/Conv2D_grad/Conv2DBackpropFilter"


# ---------------------------------------------------------- keras models
def test_keras_resnet50_graph_mode() -> None:
    graph, model = graphs.keras_application_graph("ResNet50")
    points = find_trace_points(graph)
    assert points.fp == f"{model}/conv1_pad/Pad"
    assert reason(points, "fp = ").startswith(f"fp = {model}/conv1_pad/Pad: first compute op consuming IteratorGetNext:0")
    assert points.bp == f"gradients/{model}/conv1_conv/Conv2D_grad/Conv2DBackpropFilter"
    assert "the one for conv1_conv/kernel" in reason(points, "bp = ")
    assert points.get_next == ("IteratorGetNext",)  # not Keras' own input_1 placeholder
    with graph.as_default():
        trainable = len(tf1_trainable(graph))
    assert len(points.bp_inputs) == trainable
    assert points.iteration_end == "Momentum"
    assert_on_training_path(graph, points)


def test_keras_mobilenet_v2_graph_mode() -> None:
    graph, model = graphs.keras_application_graph("MobileNetV2")
    points = find_trace_points(graph)
    assert points.fp == f"{model}/Conv1/Conv2D"
    assert reason(points, "fp = ").startswith(f"fp = {model}/Conv1/Conv2D: first compute op consuming IteratorGetNext:0")
    assert points.bp == f"gradients/{model}/Conv1/Conv2D_grad/Conv2DBackpropFilter"
    assert points.get_next == ("IteratorGetNext",)
    # Keras' batch-norm moving-average assigns are not optimizer updates.
    assert "is_training = True: 158 optimizer updates fed by gradients" in points.reasons
    assert_on_training_path(graph, points)


def tf1_trainable(graph: tf.Graph) -> list:
    return graph.get_collection(tf.compat.v1.GraphKeys.TRAINABLE_VARIABLES)


# ---------------------------------------------------------- control flow
def test_control_flow_v1_cond_and_while_loop() -> None:
    graph = graphs.control_flow_graph(v2=False)
    types = {op.type for op in graph.get_operations()}
    assert {"NextIteration", "Merge", "Switch", "Enter", "Exit"} <= types
    points = find_trace_points(graph)
    assert points.fp == "dense_in/MatMul"
    assert points.bp == "gradients/dense_in/MatMul_grad/MatMul_1"
    assert points.get_next == ("IteratorGetNext",)
    # The trap: the loop weight's gradient accumulator is created after the
    # dense_in gradients, so "last in graph order" would pick it.
    names = [op.name for op in graph.get_operations()]
    accumulator = "gradients/loop/MatMul/ReadVariableOp/Enter_grad/Add"
    assert names.index(accumulator) > names.index(points.bp)
    assert accumulator in {t.rsplit(":", 1)[0] for t in points.bp_inputs}
    assert_on_training_path(graph, points)


def test_control_flow_v1_batch_straight_into_the_loop() -> None:
    points = find_trace_points(graphs.control_flow_graph(v2=False, loop_first=True))
    assert points.fp == "loop/MatMul"
    assert reason(points, "fp = ").startswith(
        "fp = loop/MatMul: first compute op consuming IteratorGetNext:0 (via Enter, Merge, Switch, Identity)")
    assert points.bp == "gradients/loop/MatMul/ReadVariableOp/Enter_grad/Add"


def test_control_flow_v2_cond_and_while_loop() -> None:
    graph = graphs.control_flow_graph(v2=True)
    types = {op.type for op in graph.get_operations()}
    assert "NextIteration" not in types and {"While", "StatelessIf"} <= types
    points = find_trace_points(graph)
    assert points.fp == "dense_in/MatMul"
    assert points.bp == "gradients/dense_in/MatMul_grad/MatMul_1"
    assert "gradients/loop_grad/loop_grad:4" in points.bp_inputs  # loop_w's gradient leaves the While grad op
    assert_on_training_path(graph, points)


def test_control_flow_v2_functional_ops_are_compute() -> None:
    points = find_trace_points(graphs.control_flow_graph(v2=True, loop_first=True))
    assert points.fp == "loop"
    assert reason(points, "fp = ").startswith("fp = loop: first compute op consuming IteratorGetNext:0")
    assert points.bp == "gradients/loop_grad/loop_grad"


@pytest.mark.parametrize("v2, fp", [(False, "regression/MatMul"), (True, "maybe_batch")])
def test_get_next_as_optional(v2: bool, fp: str) -> None:
    points = find_trace_points(graphs.optional_graph(v2))
    assert points.get_next == ("IteratorGetNextAsOptional",)
    assert points.fp == fp
    assert reason(points, "fp = ").startswith(f"fp = {fp}: first compute op consuming IteratorGetNextAsOptional:0")
    assert points.bp == "gradients/regression/MatMul_grad/MatMul_1"


# ------------------------------------------------- between grads and updates
def test_clip_by_global_norm() -> None:
    graph = graphs.clipped_graph()
    points = find_trace_points(graph)
    assert points.fp == "hidden/MatMul"
    # The update inputs are the clipped gradients; clipping is the optimizer's arithmetic, so
    # the gradients are followed back to where backprop's scope ends: hidden/kernel's is the last computed.
    assert points.bp == "gradients/hidden/MatMul_grad/MatMul_1"
    assert "the one for hidden/kernel" in reason(points, "bp = ")
    assert set(points.bp_inputs) == MLP_BP_INPUTS
    index = GraphIndex.from_graph(graph)
    assert points.bp in index.ancestors(["clip_by_global_norm/mul_1"])
    assert_on_training_path(graph, points)


def test_sparse_adam_update_of_a_ref_embedding_is_followed_back_to_its_gradient() -> None:
    """The embedding's update value is Adam's arithmetic over a ScatterAdd into its slot (itself an update):
    BP is followed through it to backprop's last op, not left on Adam's truediv (AutoInt, issue 42)."""
    graph = graphs.sparse_embedding_graph()
    points = find_trace_points(graph)
    assert "(AssignSub, ResourceApplyAdam, ScatterAdd)" in reason(points, "bp = ")  # the table a ref variable
    assert is_gradient_name(points.bp) and not points.bp.startswith("Adam/"), points.bp
    assert "the one for feature_embeddings" in reason(points, "bp = ")
    assert not [t for t in points.bp_inputs if t.startswith("Adam/")], points.bp_inputs
    assert_on_training_path(graph, points)


def test_gradient_accumulation_assign_add_updates() -> None:
    graph = graphs.accumulation_graph()
    points = find_trace_points(graph)
    assert points.is_training
    assert points.iteration_end == "train_op"
    assert reason(points, "iteration_end = ").startswith("iteration_end = train_op: the sink op that runs the most")
    assert points.bp == "gradients/hidden/MatMul_grad/MatMul_1"
    assert "(AssignAddVariableOp)" in reason(points, "bp = ")
    assert set(points.bp_inputs) == MLP_BP_INPUTS
    # Initializer assigns and the global-step increment are not updates.
    assert "is_training = True: 4 optimizer updates fed by gradients" in points.reasons
    assert_on_training_path(graph, points)


def test_collective_all_reduce_between_gradients_and_updates() -> None:
    graph = graphs.collective_graph()
    points = find_trace_points(graph)
    assert points.all_reduce == (("allreduce_1", "allreduce_2", "allreduce_3", "allreduce_4"),)
    assert points.bp == "gradients/logits/BiasAdd_grad/BiasAddGrad"
    assert reason(points, "bp = ").startswith(
        "bp = gradients/logits/BiasAdd_grad/BiasAddGrad: the gradient op feeding the last all-reduce allreduce_4 "
        "(CollectiveReduceV2")
    # Gradients as backprop produces them, not the reduced tensors.
    assert set(points.bp_inputs) == MLP_BP_INPUTS
    assert points.fp == "hidden/MatMul"
    assert_on_training_path(graph, points)


def test_interleaved_all_reduces_form_groups() -> None:
    points = find_trace_points(graphs.collective_graph(interleaved=True))
    assert points.all_reduce == (("allreduce_1", "allreduce_2"), ("allreduce_3", "allreduce_4"))
    assert points.bp == "gradients_1/hidden/BiasAdd_grad/BiasAddGrad"
    assert "in 2 group(s)" in reason(points, "all_reduce = ")


def test_horovod_allreduce_graph_def() -> None:
    graph_def = graphs.horovod_graph_def()
    assert sum(node.op == "HorovodAllreduce" for node in graph_def.node) == 4
    points = find_trace_points(graph_def)
    prefix = "DistributedGradientDescentOptimizer_Allreduce/HorovodAllreduce_"
    assert points.all_reduce == (tuple(f"{prefix}{k}" for k in range(4)),)
    assert points.bp == "gradients/logits/BiasAdd_grad/BiasAddGrad"
    assert f"the last all-reduce {prefix}3 (HorovodAllreduce" in reason(points, "bp = ")
    assert set(points.bp_inputs) == MLP_BP_INPUTS  # not the truediv after each all-reduce
    assert points.iteration_end == "GradientDescent"
    assert points.fp == "hidden/MatMul"


# ---------------------------------------------------- what is not training
def test_inference_graph() -> None:
    points = find_trace_points(graphs.inference_graph())
    assert not points.is_training
    assert (points.fp, points.bp, points.iteration_end) == (None, None, None)
    assert points.bp_inputs == () and points.all_reduce == ()
    assert points.get_next == ("IteratorGetNext",)
    assert not points.found
    assert "inference graph" in reason(points, "is_training = ")


def test_unused_test_iterator_and_shared_weight_test_tower() -> None:
    graph = graphs.test_tower_graph()
    names = [op.name for op in graph.get_operations()]
    # The traps come first in graph order.
    assert names.index("test_data/IteratorGetNext") < names.index("train_data/IteratorGetNext")
    assert names.index("model/hidden/MatMul") < names.index("model_1/hidden/MatMul")
    points = find_trace_points(graph)
    assert points.get_next == ("train_data/IteratorGetNext",)
    assert "do not feed the loss of the training step: test_data/IteratorGetNext" in reason(points, "get_next = ")
    assert points.fp == "model_1/hidden/MatMul"
    assert reason(points, "fp = ").startswith(
        "fp = model_1/hidden/MatMul: first compute op consuming train_data/IteratorGetNext:0")
    assert points.bp == "gradients/model_1/hidden/MatMul_grad/MatMul_1"
    assert_on_training_path(graph, points)


@pytest.mark.parametrize("num_epochs, dequeue, op_type", [
    (None, "random_shuffle_queue_DequeueMany", "QueueDequeueManyV2"),
    (1, "fifo_queue_DequeueUpTo", "QueueDequeueUpToV2"),
])
def test_estimator_numpy_input_fn_queue(num_epochs: int | None, dequeue: str, op_type: str) -> None:
    graph = graphs.estimator_queue_graph(num_epochs)
    assert graph.get_operation_by_name(dequeue).type == op_type
    points = find_trace_points(graph)
    assert points.get_next == (dequeue,)
    assert points.fp == "hidden/MatMul"
    # Output 0 of the dequeue is numpy_input_fn's row index, 1 the features.
    assert reason(points, "fp = ").startswith(f"fp = hidden/MatMul: first compute op consuming {dequeue}:1")
    assert points.bp == "gradients/hidden/MatMul_grad/MatMul_1"
    assert points.iteration_end == "Adagrad"


# ------------------------------------------------------------ user names
def test_user_names_win() -> None:
    points = find_trace_points(graphs.mlp_graph(), "hidden/BiasAdd", "gradients/logits/MatMul_grad/MatMul_1")
    assert (points.fp, points.bp) == ("hidden/BiasAdd", "gradients/logits/MatMul_grad/MatMul_1")
    assert "fp = hidden/BiasAdd: given as fp_point" in points.reasons
    assert "bp = gradients/logits/MatMul_grad/MatMul_1: given as bp_point" in points.reasons
    assert points.warnings == ()
    assert points.get_next == ("IteratorGetNext",)  # the rest is still discovered


def test_wrong_user_name_lists_the_five_closest_ops() -> None:
    with pytest.raises(TracePointsError) as error:
        find_trace_points(graphs.mlp_graph(), fp_point="hiden/MatMul")
    assert len(error.value.suggestions) == 5
    assert error.value.suggestions[0] == "hidden/MatMul"
    message = str(error.value)
    assert "fp_point 'hiden/MatMul' is not an op in this graph" in message
    assert all(repr(s) in message for s in error.value.suggestions)
    with pytest.raises(TracePointsError, match="bp_point 'gradients/nope'"):
        find_trace_points(graphs.mlp_graph(), bp_point="gradients/nope")
    with pytest.raises(TracePointsError, match="train_op 'trian'"):
        find_trace_points(graphs.mlp_graph(), train_op="trian")


def test_initializer_as_fp_is_a_warning_not_an_empty_trace() -> None:
    points = find_trace_points(graphs.mlp_graph(), fp_point="hidden/kernel/Assign")
    assert points.fp == "hidden/kernel/Assign"
    assert points.bp == "gradients/hidden/MatMul_grad/MatMul_1"
    (warning,) = points.warnings
    assert warning.startswith("warning: fp_point hidden/kernel/Assign does not run in the training step")


def test_bp_in_the_forward_pass_and_fp_in_the_backward_pass_warn() -> None:
    points = find_trace_points(graphs.mlp_graph(), fp_point="gradients/hidden/MatMul_grad/MatMul_1",
                               bp_point="logits/MatMul")
    warnings = points.warnings
    assert any(w.startswith("warning: fp_point gradients/hidden/MatMul_grad/MatMul_1 is in the backward pass")
               for w in warnings)
    assert any(w.startswith("warning: bp_point logits/MatMul is in the forward pass") for w in warnings)


def test_tensor_name_means_its_op() -> None:
    points = find_trace_points(graphs.mlp_graph(), fp_point="hidden/MatMul:0")
    assert points.fp == "hidden/MatMul"
    assert "fp_point 'hidden/MatMul:0' is a tensor name; using its op hidden/MatMul" in points.reasons


def test_explicit_train_op() -> None:
    graph_def = graphs.mlp_graph("adam").as_graph_def()
    points = find_trace_points(graph_def, train_op="Adam")
    assert points.iteration_end == "Adam"
    assert "iteration_end = Adam: given as train_op" in points.reasons
    # Naming an op that runs no update: a graph without a training step.
    points = find_trace_points(graph_def, train_op="hidden/MatMul")
    assert not points.is_training and points.fp is None


def test_to_dict_round_trip_is_json() -> None:
    points = find_trace_points(graphs.collective_graph(interleaved=True))
    data = json.loads(json.dumps(points.to_dict()))
    assert TracePoints.from_dict(data) == points
    assert data["all_reduce"] == [["allreduce_1", "allreduce_2"], ["allreduce_3", "allreduce_4"]]
    assert points.profiling_options() == {"fp_point": "hidden/MatMul",
                                          "bp_point": "gradients_1/hidden/BiasAdd_grad/BiasAddGrad"}
    with pytest.raises(Exception):
        points.fp = "x"  # type: ignore[misc]


def test_gradients_without_gradient_names_fall_back_to_structure() -> None:
    """A hand-renamed graph: no gradients/ scope, no *_grad/ scopes."""
    graph_def = graphs.mlp_graph().as_graph_def()

    def rename(name: str) -> str:
        return name.replace("gradients/", "bw/").replace("_grad/", "_bw/")

    for node in graph_def.node:
        node.name = rename(node.name)
        inputs = [rename(text) for text in node.input]
        del node.input[:]
        node.input.extend(inputs)
    assert not any(is_gradient_name(node.name) for node in graph_def.node)
    points = find_trace_points(graph_def)
    assert points.is_training
    assert points.fp == "hidden/MatMul"
    assert points.bp == "bw/hidden/MatMul_bw/MatMul_1"
    assert set(points.bp_inputs) == {rename(t) for t in MLP_BP_INPUTS}
    assert any(w.startswith("warning: no gradient-scope ops") for w in points.warnings)


def test_train_op_collection_without_updates_is_not_trusted() -> None:
    graph = graphs.mlp_graph()
    collection = graph.get_collection_ref(tf.compat.v1.GraphKeys.TRAIN_OP)
    del collection[:]
    collection.append(graph.get_operation_by_name("sparse_softmax_cross_entropy_loss/value"))
    points = find_trace_points(graph)
    assert points.iteration_end == "GradientDescent"
    assert any("the train_op collection (sparse_softmax_cross_entropy_loss/value) runs no optimizer update" in w
               for w in points.warnings)


@pytest.mark.parametrize("v2", [False, True])
def test_dynamic_loss_scaling(v2: bool) -> None:
    """Gradients are unscaled (mul_k), checked for finiteness, and applied in
    a tf.cond; the loss-scale variable is updated in another cond, guarded by
    the same check. Only the gradients count, and the step is the outer op."""
    graph = graphs.loss_scale_graph(v2)
    points = find_trace_points(graph)
    assert points.is_training
    assert points.fp == "hidden/MatMul"
    # Unscaling (mul_k) is the optimizer's arithmetic: BP is hidden/kernel's gradient before it.
    assert points.bp == "gradients/hidden/MatMul_grad/MatMul_1"
    assert set(points.bp_inputs) == MLP_BP_INPUTS
    index = GraphIndex.from_graph(graph)
    assert index.inputs("mul_1")[0].startswith("gradients/hidden/MatMul_grad/")
    assert points.iteration_end == "GradientDescent"
    assert index.op_type("GradientDescent") != "If"
    if v2:
        # the Apply ops are inside the cond's function: the If op is the update
        assert "(If)" in reason(points, "bp = ")
        assert "is_training = True: 1 optimizer update fed by gradients" in points.reasons
    else:
        # the optimizer (and its train_op collection entry) lives inside the cond
        assert graph.get_collection("train_op")[0].name == "cond_1/GradientDescent-wrapped"
        assert "which is itself consumed inside the graph" in reason(points, "iteration_end = ")
        assert "the one for hidden/kernel" in reason(points, "bp = ")
    assert_on_training_path(graph, points)


def test_gradient_tape_and_keras_optimizer() -> None:
    graph = graphs.gradient_tape_graph()
    points = find_trace_points(graph)
    assert points.fp == "sequential/d1/MatMul"
    assert points.bp == "gradient_tape/sequential/d1/MatMul/MatMul"
    assert "(ResourceApplyKerasMomentum)" in reason(points, "bp = ")
    assert all(t.startswith("gradient_tape/") for t in points.bp_inputs) and len(points.bp_inputs) == 4
    assert points.iteration_end == "SGD/SGD/AssignAddVariableOp"
    assert points.get_next == ("IteratorGetNext",)
    assert_on_training_path(graph, points)


def test_a_layer_whose_call_is_a_tf_function_has_its_backward_call_as_bp() -> None:
    """The layer's gradient is a call of TensorFlow's `__backward_` function named plain `PartitionedCall`:
    its outputs are the weight gradients the optimizer reads, so BP is that call (not a loss-side gradient)."""

    class Block(tf.keras.layers.Layer):
        def build(self, shape):
            self.kernel = self.add_weight(name="kernel", shape=(shape[-1], 4))

        @tf.function
        def call(self, x):
            return tf.nn.relu(x @ self.kernel)

    block, head = Block(), tf.keras.layers.Dense(1)
    head(block(tf.zeros((2, 8))))
    optimizer = tf.keras.optimizers.Adam(1e-3)

    @tf.function
    def step(x):
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.keras.losses.binary_crossentropy(tf.ones((2, 1)), head(block(x)), from_logits=True))
        variables = block.trainable_variables + head.trainable_variables
        optimizer.apply_gradients(zip(tape.gradient(loss, variables), variables))
        return loss

    graph = step.get_concrete_function(tf.TensorSpec((2, 8))).graph
    points = find_trace_points(graph)
    backward = [op for op in graph.get_operations()
                if op.type in ("PartitionedCall", "StatefulPartitionedCall") and "__backward_" in op.get_attr("f").name]
    assert len(backward) == 1
    assert points.bp == backward[0].name
    assert any(t.startswith(backward[0].name + ":") for t in points.bp_inputs)


def test_a_gan_function_ends_at_its_output_and_starts_at_the_generator() -> None:
    """A tf.function step training a critic then a generator, the generator's forward pass inside the critic's tape:
    its gradients nothing reads are sinks of compute ops, which TensorFlow prunes from the function. The iteration end
    is the function's output (it waits on every update), BP's tensors are both tapes', FP the generator's first layer."""
    generator = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(8), tf.keras.layers.Dense(6)])
    critic = tf.keras.Sequential([tf.keras.Input((6,)), tf.keras.layers.Dense(8), tf.keras.layers.Dense(1)])
    c_opt, g_opt = tf.keras.optimizers.SGD(0.1), tf.keras.optimizers.SGD(0.1)
    batches = iter(tf.data.Dataset.from_tensors(tf.ones((2, 6))).repeat())

    @tf.function
    def step() -> tf.Tensor:
        real = next(batches)
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(critic(generator(tf.random.normal((2, 4))))) - tf.reduce_mean(critic(real))
        c_opt.apply_gradients(zip(tape.gradient(loss, critic.trainable_variables), critic.trainable_variables))
        with tf.GradientTape() as tape:
            g_loss = -tf.reduce_mean(critic(generator(tf.random.normal((2, 4)))))
        g_opt.apply_gradients(zip(tape.gradient(g_loss, generator.trainable_variables), generator.trainable_variables))
        return g_loss

    graph = step.get_concrete_function().graph
    points = find_trace_points(graph)
    outputs = {t.op.name for t in graph.outputs}
    assert points.iteration_end in outputs, points.reasons
    # Without what the function runs (a bare GraphDef), the end is a gradient nothing reads (the pruned op of the
    # issue), and BP's tensors are only the critic's: the generator's update is not among that op's ancestors.
    unaware = find_trace_points(graph.as_graph_def())
    assert is_gradient_name(unaware.iteration_end)
    assert set(unaware.bp_inputs) < set(points.bp_inputs)
    assert len(points.bp_inputs) - len(unaware.bp_inputs) == len(generator.trainable_variables)
    assert graph.get_operation_by_name(points.fp).type == "MatMul"
    assert "fed by the random" in next(r for r in points.reasons if r.startswith("fp = "))
