"""In-graph probes: `tf.timestamp` ops wired with control dependencies at the trace points.

Why this and not `RunOptions(FULL_TRACE)`: full tracing costs +144% to +368% per
step on this kind of machine and grows with the op count; a handful of timestamp
ops costs the same whatever the model size. Each probe only *waits* on existing
ops (control inputs on the probe, never on the model), so the model's ops, their
order and their results are unchanged; and probes hang only off ancestors of the
train op, so fetching them never runs an op the training step would not run.

All probe values travel in one float64 vector (one extra fetch per iteration):

    [get_next start/end pairs..., fp_start?, bp_end?, reduce start/end pairs..., iteration_end, global_step?]
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import tensorflow as tf

from npu_tf_profiling import layout
from npu_tf_profiling.graph_points import TracePoints

PROBE_SCOPE = "npu_tf_profiling_probes"
# Data inputs fed from Python (feed_dict) have no in-graph read to time.
FED_INPUT_TYPES = ("Placeholder", "PlaceholderWithDefault")
SECONDS_TO_US = 1e6


@dataclass(frozen=True)
class ProbeLayout:
    """Where each value sits in the probe vector."""

    get_next_pairs: int
    has_fp: bool
    has_bp: bool
    reduce_pairs: int
    has_step: bool

    def decode(self, values: Sequence[float]) -> dict[str, Any]:
        """Probe vector -> the time fields of one training_trace record (µs since the epoch)."""
        us = [round(v * SECONDS_TO_US, 1) for v in values]
        at = 2 * self.get_next_pairs
        record: dict[str, Any] = {layout.K_GET_NEXT: [us[i : i + 2] for i in range(0, at, 2)]}
        record[layout.K_FP_START] = us[at] if self.has_fp else None
        at += self.has_fp
        record[layout.K_BP_END] = us[at] if self.has_bp else None
        at += self.has_bp
        record[layout.K_REDUCE] = [us[i : i + 2] for i in range(at, at + 2 * self.reduce_pairs, 2)]
        at += 2 * self.reduce_pairs
        record[layout.K_ITERATION_END] = us[at]
        record[layout.K_STEP] = int(values[at + 1]) if self.has_step else None
        return record


@dataclass(frozen=True)
class GraphProbes:
    """The probes built into one graph, and the facts the per-run check needs."""

    fetch: tf.Tensor
    layout: ProbeLayout
    iteration_end: str
    # Existing ops the probes wait on: a run that feeds one of their outputs is not traced,
    # because waiting on a pruned op would make it run.
    waited_ops: frozenset[str]


def _stamp_after(ops: Sequence[tf.Operation], name: str) -> tf.Tensor:
    with tf.control_dependencies(list(ops)):
        return tf.timestamp(name=name)


def _producers(op: tf.Operation) -> list[tf.Operation]:
    """The ops whose completion makes `op` ready: its data and control inputs."""
    unique: dict[str, tf.Operation] = {}
    for producer in [t.op for t in op.inputs] + list(op.control_inputs):
        unique.setdefault(producer.name, producer)
    return list(unique.values())


def _global_step_value(graph: tf.Graph, name: str, after: tf.Operation) -> tf.Tensor:
    """The global step read after the train op (i.e. after its increment), as float64."""
    op = graph.get_operation_by_name(name)
    with tf.control_dependencies([after]):
        if op.type in ("VarHandleOp",):
            value = tf.raw_ops.ReadVariableOp(resource=op.outputs[0], dtype=op.get_attr("dtype"))
        else:
            value = tf.identity(op.outputs[0])
        return tf.cast(value, tf.float64)


def build_probes(graph: tf.Graph, points: TracePoints, on_path: frozenset[str], user_bp: bool) -> GraphProbes:
    """Add the probe ops for `points` to `graph` (temporarily unfinalising a finalised graph).

    `on_path` is the set of ancestors of the train op; points outside it are left out.
    `user_bp`: the user named bp_point, so BP End is that op's end, not "all gradients ready".
    """
    if points.iteration_end is None:
        raise ValueError("cannot build probes without an iteration end (train op)")
    finalized = graph.finalized
    if finalized:
        graph._unsafe_unfinalize()  # Estimator/MonitoredSession finalise before the session exists.
    try:
        with graph.as_default(), tf.name_scope(PROBE_SCOPE), tf.device("/cpu:0"):
            return _build(graph, points, on_path, user_bp)
    finally:
        if finalized:
            graph.finalize()


def _build(graph: tf.Graph, points: TracePoints, on_path: frozenset[str], user_bp: bool) -> GraphProbes:
    get_op = graph.get_operation_by_name
    stamps: list[tf.Tensor] = []
    waited: set[str] = set()

    def stamp(ops: list[tf.Operation], name: str) -> None:
        stamps.append(_stamp_after(ops, name))
        waited.update(op.name for op in ops)

    read_ops = [get_op(n) for n in points.get_next if n in on_path and get_op(n).type not in FED_INPUT_TYPES]
    for op in read_ops:
        stamp(_producers(op), "get_next_start")
        stamp([op], "get_next_end")
    has_fp = points.fp is not None and points.fp in on_path
    if has_fp:
        stamp(_producers(get_op(points.fp)), "fp_start")
    bp_ops = _bp_ops(graph, points, on_path, user_bp)
    if bp_ops:
        stamp(bp_ops, "bp_end")
    groups = [[get_op(n) for n in group if n in on_path] for group in points.all_reduce]
    groups = [g for g in groups if g]
    for group in groups:
        stamp(_producers(group[0]), "reduce_start")
        stamp(group, "reduce_end")
    train_op = get_op(points.iteration_end)
    stamp([train_op], "iteration_end")
    values = list(stamps)
    has_step = points.global_step is not None
    if has_step:
        values.append(_global_step_value(graph, points.global_step, train_op))
    fetch = tf.stack(values, name="vector")
    probe_layout = ProbeLayout(len(read_ops), has_fp, bool(bp_ops), len(groups), has_step)
    return GraphProbes(fetch=fetch, layout=probe_layout, iteration_end=train_op.name, waited_ops=frozenset(waited))


def _bp_ops(graph: tf.Graph, points: TracePoints, on_path: frozenset[str], user_bp: bool) -> list[tf.Operation]:
    """The user's bp op, or (automatic points) every producer of a gradient feeding the updates.

    Waiting for all of them times "all gradients ready", which is what the
    Iteration Refresh (update tail) is measured from.
    """
    names: list[str] = []
    if points.bp_inputs and points.bp is not None and not user_bp:
        names = list(dict.fromkeys(t.rsplit(":", 1)[0] for t in points.bp_inputs))
    elif points.bp is not None:
        names = [points.bp]
    return [graph.get_operation_by_name(n) for n in names if n in on_path]

