"""Synthetic training-shaped GraphDefs of any size, for benchmarks and tests.

Building a 100k-op graph through the TensorFlow Python API takes minutes; the
point-discovery speed target is about graphs that big, so this writes the
NodeDefs directly, in the shape ``tf.compat.v1`` produces for an MLP trained
with GradientDescent: a tf.data iterator, a forward chain of
MatMul/BiasAdd/Relu layers reading resource variables, a loss, a
``gradients/`` scope with the per-op ``*_grad`` ops and ``tuple/`` gating
Identities, one ResourceApplyGradientDescent per variable, initializers, and a
global-step increment as the train op. No attrs are set: the graph is only
meant to be analysed, never run.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

NODES_PER_LAYER = 27  # forward 11 + gradients 12 + updates 2 + init 2, roughly


@dataclass(frozen=True)
class SyntheticGraph:
    """The GraphDef and the answers discovery should give for it."""

    graph_def: Any
    layers: int
    fp: str
    bp: str
    train_op: str


def synthetic_training_graph_def(target_nodes: int) -> SyntheticGraph:
    """A training GraphDef with about ``target_nodes`` ops (at least one layer)."""
    from tensorflow.core.framework import graph_pb2

    graph_def = graph_pb2.GraphDef()
    nodes = graph_def.node

    def add(name: str, op: str, *inputs: str) -> str:
        node = nodes.add()
        node.name = name
        node.op = op
        node.input.extend(inputs)
        return name

    layers = max(1, (target_nodes - 20) // NODES_PER_LAYER)
    add("dataset/components", "Const")
    add("TensorSliceDataset", "TensorSliceDataset", "dataset/components")
    add("RepeatDataset", "RepeatDataset", "TensorSliceDataset")
    add("OneShotIterator", "OneShotIterator")
    add("IteratorGetNext", "IteratorGetNext", "OneShotIterator")
    initializers: list[str] = []
    activation = "IteratorGetNext:0"
    reads: dict[str, str] = {}
    for k in range(layers):
        scope = f"layer_{k}"
        for var in ("kernel", "bias"):
            v = add(f"{scope}/{var}", "VarHandleOp")
            add(f"{scope}/{var}/Initializer/Const", "Const")
            initializers.append(add(f"{scope}/{var}/Assign", "AssignVariableOp", v, f"{scope}/{var}/Initializer/Const"))
            reads[v] = add(f"{scope}/{var}/Read/ReadVariableOp", "ReadVariableOp", v)
        kernel_read = add(f"{scope}/MatMul/ReadVariableOp", "ReadVariableOp", f"{scope}/kernel")
        matmul = add(f"{scope}/MatMul", "MatMul", activation, kernel_read)
        bias_read = add(f"{scope}/BiasAdd/ReadVariableOp", "ReadVariableOp", f"{scope}/bias")
        bias_add = add(f"{scope}/BiasAdd", "BiasAdd", matmul, bias_read)
        activation = add(f"{scope}/Relu", "Relu", bias_add)
    add("loss/xentropy", "SparseSoftmaxCrossEntropyWithLogits", activation, "IteratorGetNext:1")
    add("loss/Const", "Const")
    add("loss/Mean", "Mean", "loss/xentropy", "loss/Const")
    add("global_step", "VarHandleOp")
    add("global_step/Initializer/zeros", "Const")
    initializers.append(add("global_step/Assign", "AssignVariableOp", "global_step", "global_step/Initializer/zeros"))
    add("gradients/Shape", "Const")
    add("gradients/grad_ys_0/Const", "Const")
    add("gradients/grad_ys_0", "Fill", "gradients/Shape", "gradients/grad_ys_0/Const")
    add("gradients/loss/Mean_grad/Tile", "Tile", "gradients/grad_ys_0", "loss/Const")
    add("gradients/loss/xentropy_grad/mul", "Mul", "gradients/loss/Mean_grad/Tile", "loss/xentropy:1")
    upstream = "gradients/loss/xentropy_grad/mul"
    grads: list[tuple[str, str]] = []
    for k in reversed(range(layers)):
        scope = f"layer_{k}"
        g = f"gradients/{scope}"
        relu_grad = add(f"{g}/Relu_grad/ReluGrad", "ReluGrad", upstream, f"{scope}/Relu")
        bias_grad = add(f"{g}/BiasAdd_grad/BiasAddGrad", "BiasAddGrad", relu_grad)
        add(f"{g}/BiasAdd_grad/tuple/group_deps", "NoOp", f"^{relu_grad}", f"^{bias_grad}")
        through = add(f"{g}/BiasAdd_grad/tuple/control_dependency", "Identity", relu_grad,
                      f"^{g}/BiasAdd_grad/tuple/group_deps")
        bias_final = add(f"{g}/BiasAdd_grad/tuple/control_dependency_1", "Identity", bias_grad,
                         f"^{g}/BiasAdd_grad/tuple/group_deps")
        previous = "IteratorGetNext:0" if k == 0 else f"layer_{k - 1}/Relu"
        input_grad = add(f"{g}/MatMul_grad/MatMul", "MatMul", through, f"{scope}/MatMul/ReadVariableOp")
        kernel_grad = add(f"{g}/MatMul_grad/MatMul_1", "MatMul", previous, through)
        add(f"{g}/MatMul_grad/tuple/group_deps", "NoOp", f"^{input_grad}", f"^{kernel_grad}")
        upstream = add(f"{g}/MatMul_grad/tuple/control_dependency", "Identity", input_grad,
                       f"^{g}/MatMul_grad/tuple/group_deps")
        kernel_final = add(f"{g}/MatMul_grad/tuple/control_dependency_1", "Identity", kernel_grad,
                           f"^{g}/MatMul_grad/tuple/group_deps")
        grads.append((f"{scope}/kernel", kernel_final))
        grads.append((f"{scope}/bias", bias_final))
    add("GradientDescent/learning_rate", "Const")
    applies = [
        add(f"GradientDescent/update_{var}/ResourceApplyGradientDescent", "ResourceApplyGradientDescent",
            var, "GradientDescent/learning_rate", grad)
        for var, grad in grads
    ]
    add("GradientDescent/update", "NoOp", *(f"^{a}" for a in applies))
    add("GradientDescent/Const", "Const", "^GradientDescent/update")
    add("GradientDescent", "AssignAddVariableOp", "global_step", "GradientDescent/Const")
    add("init", "NoOp", *(f"^{i}" for i in initializers))
    return SyntheticGraph(
        graph_def=graph_def,
        layers=layers,
        fp="layer_0/MatMul",
        bp="gradients/layer_0/MatMul_grad/MatMul_1",
        train_op="GradientDescent",
    )
