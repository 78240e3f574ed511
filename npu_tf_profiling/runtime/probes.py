"""In-graph probes: `tf.timestamp` ops wired with control dependencies at the trace points.

Why this and not `RunOptions(FULL_TRACE)`: full tracing costs +144% to +368% per
step on this kind of machine and grows with the op count; a handful of timestamp
ops costs the same whatever the model size.

Why the probes are also wired *into* the model (the one structural change we make):
TensorFlow's executor runs a ready op's successors depth-first when it has few
threads (with one inter-op thread it runs them inline), so a timestamp that merely
waits on an op can run long after it; we measured "FP Start" landing after "BP
End". So each probe that marks the *start* of an op becomes a control input of
that op (the op cannot start before its stamp has run), and each probe that marks
the *end* of an op becomes a control input of that op's consumers. A control
input carries no value: what every op computes is unchanged, and the stamps only
wait on ops the rewired op already depends on, so no run executes anything of the
model it would not have executed. Runs that execute those ops also execute the
(microsecond, side-effect-free) stamps; only runs of the train op fetch them.

Stamps are also chained (GetNext end -> FP start -> BP end -> iteration end), so
the recorded order always matches the physical order. Rewiring is skipped (the
probe then simply waits) for ops inside v1 control-flow contexts, and when the
session already ran the graph (TensorFlow ignores edits to ops a session has
loaded).

All probe values travel in one float64 vector (one extra fetch per iteration):

    [get_next start/end pairs..., fp_start?, bp_end?, reduce start/end pairs..., iteration_end, global_step?]
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

import numpy as np
import tensorflow as tf

from npu_tf_profiling import layout
from npu_tf_profiling.graph_points import GraphIndex, TracePoints

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

    def decode(self, values: np.ndarray) -> dict[str, Any]:
        """Probe vector -> the time fields of one training_trace record (µs since the epoch).

        Vectorised: this runs on every traced step, so it must cost microseconds.
        """
        us = np.round(values * SECONDS_TO_US, 1).tolist()
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
    # Ops that could not be rewired (control-flow context, or graph already loaded by a session).
    not_rewired: tuple[str, ...] = ()


@dataclass
class _Builder:
    graph: tf.Graph
    index: GraphIndex
    may_rewire: bool
    waited: set[str] = field(default_factory=set)
    not_rewired: list[str] = field(default_factory=list)

    def stamp(self, after: Iterable[tf.Operation], name: str) -> tf.Tensor:
        ops = list(after)
        self.waited.update(op.name for op in ops if not op.name.startswith(PROBE_SCOPE))
        with tf.control_dependencies(ops):
            return tf.timestamp(name=name)

    def make_wait(self, ops: Iterable[tf.Operation], stamp: tf.Tensor) -> None:
        """Make each op wait on `stamp` (see the module docstring for why)."""
        for op in ops:
            if self.may_rewire and _outside_control_flow(op):
                op._add_control_input(stamp.op)
            else:
                self.not_rewired.append(op.name)

    def start_stamp(self, op: tf.Operation, name: str, also_after: Sequence[tf.Tensor] = ()) -> tf.Tensor:
        """The moment `op` may start: after its inputs (and `also_after`), and before `op` itself."""
        stamp = self.stamp(_producers(op) + [t.op for t in also_after], name)
        self.make_wait([op], stamp)
        return stamp

    def end_stamp(self, op: tf.Operation, name: str) -> tf.Tensor:
        """The moment `op` has finished: after it, and before its consumers."""
        stamp = self.stamp([op], name)
        self.make_wait(_consumers(op), stamp)
        return stamp


def _producers(op: tf.Operation) -> list[tf.Operation]:
    """The ops whose completion makes `op` ready: its data and control inputs.

    Placeholders are left out: their value is fed before the step starts, and a
    control dependency on a fed placeholder would make TensorFlow run it unfed.
    """
    unique: dict[str, tf.Operation] = {}
    for producer in [t.op for t in op.inputs] + list(op.control_inputs):
        if producer.type not in FED_INPUT_TYPES:
            unique.setdefault(producer.name, producer)
    return list(unique.values())


def _consumers(op: tf.Operation) -> list[tf.Operation]:
    unique: dict[str, tf.Operation] = {}
    for consumer in [c for t in op.outputs for c in t.consumers()] + list(op._control_outputs):
        if not consumer.name.startswith(PROBE_SCOPE):
            unique.setdefault(consumer.name, consumer)
    return list(unique.values())


def _outside_control_flow(op: tf.Operation) -> bool:
    return getattr(op, "_control_flow_context", None) is None


def _global_step_value(graph: tf.Graph, name: str, after: tf.Tensor) -> tf.Tensor:
    """The global step read after the iteration end (i.e. after its increment), as float64."""
    op = graph.get_operation_by_name(name)
    with tf.control_dependencies([after]):
        if op.type == "VarHandleOp":
            value = tf.raw_ops.ReadVariableOp(resource=op.outputs[0], dtype=op.get_attr("dtype"))
        else:
            value = tf.identity(op.outputs[0])
        return tf.cast(value, tf.float64)


def build_probes(graph: tf.Graph, points: TracePoints, index: GraphIndex, *, user_bp: bool, may_rewire: bool) -> GraphProbes:
    """Add the probe ops for `points` to `graph` (temporarily unfinalising a finalised graph).

    Points that are not ancestors of the train op are left out (a probe there would
    make the training step run an op it does not run). `user_bp`: the user named
    bp_point, so BP End is that op's end rather than "all gradients ready".
    """
    if points.iteration_end is None:
        raise ValueError("cannot build probes without an iteration end (train op)")
    on_path = frozenset(index.ancestors([points.iteration_end]))
    finalized = graph.finalized
    if finalized:
        graph._unsafe_unfinalize()  # Estimator/MonitoredSession finalise before the session exists.
    try:
        with graph.as_default(), tf.name_scope(PROBE_SCOPE), tf.device("/cpu:0"):
            return _build(_Builder(graph, index, may_rewire), points, on_path, user_bp)
    finally:
        if finalized:
            graph.finalize()


def _build(builder: _Builder, points: TracePoints, on_path: frozenset[str], user_bp: bool) -> GraphProbes:
    get_op = builder.graph.get_operation_by_name
    stamps: list[tf.Tensor] = []
    reads = [get_op(n) for n in points.get_next if n in on_path and get_op(n).type not in FED_INPUT_TYPES]
    read_ends: list[tf.Tensor] = []
    for op in reads:
        stamps.append(builder.start_stamp(op, "get_next_start"))
        read_ends.append(builder.end_stamp(op, "get_next_end"))
        stamps.append(read_ends[-1])
    chain_tail: list[tf.Tensor] = list(read_ends)
    has_fp = points.fp is not None and points.fp in on_path
    if has_fp:
        fp_stamp = builder.start_stamp(get_op(points.fp), "fp_start", also_after=read_ends)
        stamps.append(fp_stamp)
        chain_tail = [fp_stamp]
    bp_ops = _bp_ops(builder.graph, points, on_path, user_bp)
    has_bp = bool(bp_ops)
    if has_bp:
        if user_bp:
            bp_stamp = builder.end_stamp(bp_ops[0], "bp_end")
        else:
            # "All gradients ready": waits on every gradient producer; nothing is rewired,
            # because making a consumer wait on *all* gradients would add dependencies.
            bp_stamp = builder.stamp(bp_ops + [t.op for t in chain_tail], "bp_end")
        stamps.append(bp_stamp)
        chain_tail = [bp_stamp]
    reduce_ends: list[tf.Tensor] = []
    groups = [[get_op(n) for n in group if n in on_path] for group in points.all_reduce]
    groups = [g for g in groups if g]
    for group in groups:
        stamps.append(builder.start_stamp(group[0], "reduce_start"))
        reduce_ends.append(builder.end_stamp(group[-1], "reduce_end"))
        stamps.append(reduce_ends[-1])
    train_op = get_op(points.iteration_end)
    end_stamp = builder.stamp([train_op] + [t.op for t in chain_tail + reduce_ends], "iteration_end")
    values = stamps + [end_stamp]
    has_step = points.global_step is not None
    if has_step:
        values.append(_global_step_value(builder.graph, points.global_step, end_stamp))
    fetch = tf.stack(values, name="vector")
    probe_layout = ProbeLayout(len(reads), has_fp, has_bp, len(groups), has_step)
    return GraphProbes(
        fetch=fetch,
        layout=probe_layout,
        iteration_end=train_op.name,
        waited_ops=frozenset(builder.waited),
        not_rewired=tuple(builder.not_rewired),
    )


def _bp_ops(graph: tf.Graph, points: TracePoints, on_path: frozenset[str], user_bp: bool) -> list[tf.Operation]:
    """The user's bp op, or (automatic points) every producer of a gradient feeding the updates."""
    names: list[str] = []
    if user_bp and points.bp is not None:
        names = [points.bp]
    elif points.bp_inputs:
        names = list(dict.fromkeys(t.rsplit(":", 1)[0] for t in points.bp_inputs))
    elif points.bp is not None:
        names = [points.bp]
    return [graph.get_operation_by_name(n) for n in names if n in on_path]
