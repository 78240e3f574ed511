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

import functools
from dataclasses import dataclass, field
from typing import Iterable, Sequence

import numpy as np
import tensorflow as tf

from npu_tf_profiling.raw_format.training_record import line_template
from npu_tf_profiling.graph_points import GraphIndex, TracePoints
from npu_tf_profiling.graph_points.own_ops import PROBE_SCOPE  # discovery leaves these ops out

# Data inputs fed from Python (feed_dict) have no in-graph read to time.
FED_INPUT_TYPES = ("Placeholder", "PlaceholderWithDefault")
SECONDS_TO_US = 1e6


@dataclass(frozen=True)
class ProbeLayout:
    """Where each value sits in the probe vector, and how a vector becomes one raw record."""

    get_next_pairs: int
    has_fp: bool
    has_bp: bool
    reduce_pairs: int
    has_step: bool

    @functools.cached_property
    def _line_format(self) -> str:
        """The record template of this graph's probe vector, built once (it is filled on every traced step)."""
        return line_template(self.get_next_pairs, self.has_fp, self.has_bp, self.reduce_pairs, self.has_step)

    def step(self, values: np.ndarray) -> int | None:
        """The global step the vector carries (its last value), if the graph has one."""
        return int(values[-1]) if self.has_step else None

    def record_line(self, model_id: int, run: int, values: np.ndarray) -> bytes:
        """Probe vector (seconds) -> one training_trace line, times in µs since the epoch."""
        times = (values * SECONDS_TO_US).tolist()
        if self.has_step:
            times[-1] = int(values[-1])
        return (self._line_format % (model_id, run, *times)).encode("ascii")


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
    _model_deps: dict[str, frozenset[str]] = field(default_factory=dict)

    def stamp(self, after: Iterable[tf.Operation], name: str) -> tf.Tensor:
        ops = list(after)
        model_ops = {op.name for op in ops if not op.name.startswith(PROBE_SCOPE)}
        self.waited.update(model_ops)
        with tf.control_dependencies(ops):
            stamp = tf.timestamp(name=name)
        # The model ops this stamp (transitively) waits on, for the rewiring safety check.
        self._model_deps[stamp.op.name] = frozenset(model_ops).union(
            *(self._model_deps.get(op.name, frozenset()) for op in ops if op.name.startswith(PROBE_SCOPE))
        )
        return stamp

    def make_wait(self, ops: Iterable[tf.Operation], stamp: tf.Tensor) -> None:
        """Make each op wait on `stamp` (see the module docstring for why)."""
        for op in ops:
            if self.may_rewire and _outside_control_flow(op):
                op._add_control_input(stamp.op)
            else:
                self.not_rewired.append(op.name)

    def start_stamp(self, op: tf.Operation, name: str, also_after: Sequence[tf.Tensor] = ()) -> tf.Tensor:
        """The moment `op` may start: after its inputs (and `also_after`), and before `op` itself.

        Where `op` reads variables, the stamp goes between its other inputs and those
        reads instead (the read waits on the stamp, `op` on the read): `op` itself is
        then untouched, so Grappler can still fuse it (a control input on a MatMul or
        Conv2D would block its fusion with the bias and activation).
        """
        producers = _producers(op)
        before = [p for p in producers if not _is_variable_read(p)] + [t.op for t in also_after]
        gates = [p for p in producers if _is_variable_read(p) and self._wait_is_safe(p, before)]
        stamp = self.stamp([p for p in producers if p not in gates] + [t.op for t in also_after], name)
        targets = gates or ([op] if self._wait_is_safe(op, before) else [])
        if not targets:
            self.not_rewired.append(op.name)
        self.make_wait(targets, stamp)
        return stamp

    def _wait_is_safe(self, target: tf.Operation, before: list[tf.Operation]) -> bool:
        """Whether making `target` wait on a stamp after `before` adds no work to any run.

        True when `target` already depends on every model op the stamp waits on; for a
        variable read (the gate of a compute op), when each of its consumers does.
        """
        needed = set().union(*(self._model_deps.get(op.name, frozenset({op.name})) for op in before))
        if not needed:
            return True
        if needed <= self.index.ancestors([target.name]):
            return True
        return _is_variable_read(target) and all(needed <= self.index.ancestors([c.name]) for c in _consumers(target))

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


def _is_variable_read(op: tf.Operation) -> bool:
    """A resource-variable read, or the `<var>/read` Identity of a reference variable."""
    if op.type == "ReadVariableOp":
        return True
    return op.type == "Identity" and len(op.inputs) == 1 and op.inputs[0].op.type in ("VariableV2", "Variable")


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
        # Not wired into GetNext's consumers (that would block their fusion): the FP stamp,
        # which the forward pass does wait on, waits on this one.
        read_ends.append(builder.stamp([op], "get_next_end"))
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
