"""The neighbourhood of an op that the probes wire to: what shows it finished, what makes it ready, who reads it.

Split from `probes` so that module keeps to building probes. These read a `tf.Graph` as it is
being probed (the probes' own ops are left out where a consumer is asked for), which the
GraphDef index of discovery cannot: it was taken before any probe existed.
"""
from __future__ import annotations

from typing import Union

import tensorflow as tf

from npu_tf_profiling.graph_points.own_ops import is_own_op
from npu_tf_profiling.runtime import tf_private

# Data inputs fed from Python (feed_dict) have no in-graph read to time.
FED_INPUT_TYPES = ("Placeholder", "PlaceholderWithDefault")
# Ops that forward their inputs and that Grappler removes when nothing else holds them (`consumers_past_forwarding`).
FORWARDING_TYPES = ("Identity", "IdentityN")

Wait = Union[tf.Tensor, tf.Operation]  # what a stamp waits on


def finished(op: tf.Operation) -> list[Wait]:
    """What shows that `op` has finished: its outputs, or the op itself when it has none."""
    return list(op.outputs) or [op]


def producers(op: tf.Operation) -> list[tf.Operation]:
    """The ops whose completion makes `op` ready: its data and control inputs.

    Placeholders are left out: their value is fed before the step starts, and a
    control dependency on a fed placeholder would make TensorFlow run it unfed.
    """
    unique: dict[str, tf.Operation] = {}
    for producer in [t.op for t in op.inputs] + list(op.control_inputs):
        if producer.type not in FED_INPUT_TYPES:
            unique.setdefault(producer.name, producer)
    return list(unique.values())


def consumers(op: tf.Operation) -> list[tf.Operation]:
    unique: dict[str, tf.Operation] = {}
    for consumer in [c for t in op.outputs for c in t.consumers()] + tf_private.control_outputs(op):
        if not is_own_op(consumer.name):
            unique.setdefault(consumer.name, consumer)
    return list(unique.values())


def consumers_past_forwarding(op: tf.Operation) -> list[tf.Operation]:
    """The ops that use `op`'s outputs, looking through the Identity/IdentityN ops that forward them.

    Grappler removes them, unless one has a control input: Keras passes all of a step's gradients
    through one IdentityN, and one on it made every update wait for the last gradient (Keras fit's
    MLP: +12% a step, benchmarks/history/2026-12-03-tf2-bp-identityn.md). So only the uses of `op`'s own values wait.
    """
    found: dict[str, tf.Operation] = {}
    tensors = list(op.outputs)
    while tensors:
        tensor = tensors.pop()
        for consumer in tensor.consumers():
            if is_own_op(consumer.name):
                continue
            if consumer.type in FORWARDING_TYPES:
                tensors += [consumer.outputs[i] for i, t in enumerate(consumer.inputs) if t is tensor]  # output i forwards input i
            else:
                found.setdefault(consumer.name, consumer)
    return list(found.values())


def is_variable_read(op: tf.Operation) -> bool:
    """A resource-variable read, or the `<var>/read` Identity of a reference variable."""
    if op.type == "ReadVariableOp":
        return True
    return op.type == "Identity" and len(op.inputs) == 1 and op.inputs[0].op.type in ("VariableV2", "Variable")


def task_of(op: tf.Operation) -> tuple[str, int, int] | None:
    """The (job, replica, task) that runs `op` in a cluster's graph (e.g. `replica_device_setter`'s), or None.

    An op that uses a resource runs where the resource lives, whatever device it asks
    for (a variable read on a parameter server), and so does an op colocated with another.
    """
    spec = tf.DeviceSpec.from_string(_placing_op(op).device or "")
    return None if spec.job is None else (spec.job, spec.replica or 0, spec.task or 0)


def _placing_op(op: tf.Operation) -> tf.Operation:
    """The op whose device decides where `op` runs: a resource input's producer, the op it is colocated with, or itself."""
    resource = next((t.op for t in op.inputs if t.dtype == tf.resource), None)
    if resource is not None:
        return resource
    for group in op.colocation_groups():
        name = group.decode().removeprefix("loc:@")
        if name != op.name:
            try:
                return op.graph.get_operation_by_name(name)
            except KeyError:
                break
    return op


def outside_control_flow(op: tf.Operation) -> bool:
    return getattr(op, "_control_flow_context", None) is None
