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

The stamps are recorded in the graph (`ring`): one row per run of the train op,
written by an op the train op waits on, and read back in batches. Where the train
op cannot be rewired, the row's write is fetched as an extra target instead.

Under op determinism `tf.timestamp` refuses to run, so the stamps are host clock
reads (`numpy_function` of `time.time`) wired the same way (see `host_clock`).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Callable, Iterable, Sequence

import tensorflow as tf

from npu_tf_profiling.graph_points import GraphIndex, TracePoints
from npu_tf_profiling.graph_points.own_ops import PROBE_SCOPE, is_own_op  # discovery leaves these ops out
from npu_tf_profiling.raw_format.training_frame import MAX_GET_NEXT_PAIRS, RecordShape
from npu_tf_profiling.runtime.op_neighbours import (
    FED_INPUT_TYPES, Wait, consumers, consumers_past_forwarding, finished, is_variable_read, outside_control_flow, producers, task_of,
)
from npu_tf_profiling.runtime.ring import StepKey, RingOps, build_ring
from npu_tf_profiling.runtime import tf_private

# Compute ops Grappler fuses with what follows; a control input on one would block that.
FUSED_COMPUTE_TYPES = ("MatMul", "BatchMatMul", "BatchMatMulV2", "Conv2D", "Conv3D", "DepthwiseConv2dNative")

# Function calls TensorFlow inlines with a NoOp under the call's name that waits on the body's
# side effects only (control outputs), not on its data outputs: see `_Builder.gate`.
INLINED_CALL_TYPES = frozenset({"PartitionedCall", "StatefulPartitionedCall"})

Clock = Callable[[str], tf.Tensor]


def timestamp_clock(name: str) -> tf.Tensor:
    return tf.timestamp(name=name)


def host_clock(name: str) -> tf.Tensor:
    """A stamp op that op determinism allows: the host's `time.time()`, read by a stateful numpy_function.

    Same clock as `tf.timestamp` (seconds since the epoch), but each read takes the GIL.
    """
    stamp = tf.numpy_function(time.time, [], tf.float64, stateful=True, name=name)
    stamp.set_shape([])
    return stamp


DETERMINISM_NOTE = (
    "op determinism is enabled (tf.config.experimental.enable_op_determinism or TF_DETERMINISTIC_OPS), "
    "and tf.timestamp refuses to run under it: the step-trace stamps are host clock reads (numpy_function of time.time) "
    "instead, wired at the same points. Every column is measured; each stamp costs a few µs more and takes the GIL, "
    "and a graph exported from this process (e.g. a checkpoint's .meta) runs them only where this package is loaded"
)


def process_clock() -> tuple[Clock, str | None]:
    """The stamp op this process may use, and a note when it is not `tf.timestamp`.

    Checked before any probe is wired: with op determinism on, a Timestamp kernel
    fails the whole step (FailedPreconditionError), which would stop the job.
    """
    if tf_private.op_determinism_enabled():
        return host_clock, DETERMINISM_NOTE
    return timestamp_clock, None


@dataclass(frozen=True)
class GraphProbes:
    """The probes built into one graph, and the facts the per-run check needs."""

    shape: RecordShape
    ring: RingOps
    # True when the ring write is an input of the train op (every run of it records a row);
    # False when it could not be wired in, and runs of the train op must fetch `ring.write`.
    gated: bool
    iteration_end: str
    # Existing ops the probes wait on: a run that feeds one of their outputs is not traced,
    # because waiting on a pruned op would make it run.
    waited_ops: frozenset[str]
    # Ops that could not be rewired (control-flow context, or graph already loaded by a session).
    not_rewired: tuple[str, ...] = ()
    # Sentences for the run's notes (what the probes leave out, and why).
    notes: tuple[str, ...] = ()


@dataclass
class _Builder:
    graph: tf.Graph
    index: GraphIndex
    may_rewire: bool
    clock: Clock
    data_inputs: frozenset[str] = frozenset()  # the GetNext-like reads: waited on through their outputs
    home_task: tuple[str, int, int] | None = None  # (job, replica, task) of the step's compute ops; None: one task
    in_a_loop: bool = False  # a loop's body, or traced in one (see `first_successor_stamp`)
    feedable: bool = True  # a run may feed the data inputs' tensors (a Session's graph; a tf.function's never: see `gate`)
    waited: set[str] = field(default_factory=set)
    not_rewired: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    _model_deps: dict[str, frozenset[str]] = field(default_factory=dict)
    _descendants: dict[str, frozenset[str]] = field(default_factory=dict)  # of the model ops waits were asked about

    def gate(self, after: Iterable[Wait], name: str) -> list[tf.Operation]:
        """The ops to wait on to be after `after`: ops, stamps, and tensors (waited on as their ops).

        A data input (GetNext) is waited on through its *outputs*, read by one no-op
        Assert, not by a control edge: a run that feeds those tensors (a script's own
        batch instead of the iterator's) then prunes GetNext, as it would without
        profiling; a control edge would make GetNext read a batch anyway. Elsewhere a
        control edge: the extra node costs accuracy (measured: FP Start p95 6 -> 22 µs).
        A `tf.function` takes no feeds, so there GetNext is waited on by a control edge too: the
        Assert cost a 5,100-op MLP step 3-4% (about 150 µs;
        benchmarks/history/2026-12-04-tf2-loop-mlp-25-vs-50-getnext-assert.md).
        A function call's output (a layer whose `call` is a `tf.function`, its backward call) is
        read by the Assert too: TensorFlow inlines the call and gives its name to a NoOp that waits
        only on the body's side effects, so a control edge on the call fires when its inputs are
        ready, before its kernels run (ModelZoo's SGAN: BP End 1.8-2.6 ms before the weight
        gradients, docs/npu_device_surface.md).
        """
        waits = list(after)
        tensors = [w for w in waits if isinstance(w, tf.Tensor) and (
            (self.feedable and w.op.name in self.data_inputs) or w.op.type in INLINED_CALL_TYPES)]
        ops = list(dict.fromkeys(w.op if isinstance(w, tf.Tensor) else w for w in waits if not any(w is t for t in tensors)))
        if tensors:
            # A stateful sink that reads them and does nothing (its condition is true): Grappler's
            # dependency optimizer would turn a stateless one (IdentityN) into control edges on
            # the producers before a feed could replace their tensors; and marking a node
            # `_grappler_do_not_remove` makes every new fetch signature optimise the whole graph.
            # Its condition is a root node: were it made ready by the ops waited on, it would be ready
            # next to GetNext itself, and TensorFlow's executor hands an op that becomes ready next to
            # another to its thread pool (a thread wakeup) while it still counts kernels as expensive.
            with tf.control_dependencies(None):
                always = tf.constant(True, name=name + "_always")
            with tf.control_dependencies(ops):
                ops = [tf.raw_ops.Assert(condition=always, data=tensors, summarize=0, name=name)]
        return ops

    def stamp(self, after: Iterable[Wait], name: str) -> tf.Tensor:
        """A clock read once everything in `after` is done (see `gate`)."""
        waits = list(after)
        model_ops = {(w.op if isinstance(w, tf.Tensor) else w).name for w in waits}
        model_ops = {n for n in model_ops if not is_own_op(n)}
        self.waited.update(model_ops)
        with tf.control_dependencies(self.gate(waits, name + "_after")):
            stamp = self.clock(name)
        # The model ops this stamp (transitively) waits on, for the rewiring safety check.
        probes = [(w.op if isinstance(w, tf.Tensor) else w).name for w in waits]
        self._model_deps[stamp.op.name] = frozenset(model_ops).union(
            *(self._model_deps.get(n, frozenset()) for n in probes if is_own_op(n))
        )
        return stamp

    def make_wait(self, ops: Iterable[tf.Operation], stamp: tf.Tensor) -> None:
        """Make each op wait on `stamp` (see the module docstring for why)."""
        for op in ops:
            if self.may_wire(op):
                tf_private.add_control_input(op, stamp.op)
            else:
                self.not_rewired.append(op.name)

    def may_wire(self, op: tf.Operation) -> bool:
        """Whether `op` may wait on a probe: outside control flow, and on the step's own task.

        An op another task runs (a parameter server's variable read or update) would wait
        on the stamp through a message between the tasks, an RPC on the step's path.
        """
        task = task_of(op)
        return self.may_rewire and outside_control_flow(op) and (self.home_task is None or task is None or task == self.home_task)

    def start_stamp(self, op: tf.Operation, name: str, also_after: Sequence[tf.Tensor] = (), every_op_runs: bool = False) -> tf.Tensor:
        """The moment `op` may start: after its inputs (and `also_after`), and before `op` itself.

        Where `op` reads variables, the stamp goes between its other inputs and those
        reads instead (the read waits on the stamp, `op` on the read): `op` itself is
        then untouched, so Grappler can still fuse it (a control input on a MatMul or
        Conv2D would block its fusion with the bias and activation).
        `every_op_runs`: every op the stamp waits on runs in every run (a `tf.function`'s
        batch read), so the reads may wait on it even where they did not depend on those ops.
        """
        feeding = producers(op)
        before = [p for p in feeding if not is_variable_read(p)] + [t.op for t in also_after]
        gates = [p for p in feeding if is_variable_read(p) and (every_op_runs or self._wait_is_safe(p, before))]
        # A data input's outputs are waited on by its end stamp, which `also_after` then holds.
        covered = self.data_inputs if also_after else frozenset()
        inputs = [t for t in op.inputs if t.op not in gates and t.op.type not in FED_INPUT_TYPES and t.op.name not in covered]
        controls = [c for c in op.control_inputs if c not in gates and c.type not in FED_INPUT_TYPES]
        if not inputs and not controls and len(also_after) == 1 and gates:
            # `op` may start the moment that stamp is taken (typically: FP Start, where the first
            # layer reads only the batch and its weights), and its reads already wait on it (the
            # batch's first successors do): a second clock read would only add an op to the
            # step's path (about 2 µs measured per op on a 0.3 ms step). It is early by the reads
            # and the executor's dispatch (median 5-11 µs against TensorFlow's profiler on a TF2 MLP
            # step, tests/test_tf2_accuracy.py; 20-40 µs while the batch held every read of the step,
            # see `first_successor_stamp`). A stamp after the reads that gates nothing was 2-5 µs off,
            # but now and then ran at the very end of the step (an ungated op may wait behind the
            # whole inline chain): worse than early, so not used; one that gates the op blocks fusion.
            stamp = also_after[0]
            self.make_wait([g for g in gates if stamp.op not in g.control_inputs], stamp)
            return stamp
        stamp = self.stamp(inputs + controls + list(also_after), name)
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
        if self._depends_on_all(target.name, needed):
            return True
        return is_variable_read(target) and all(self._depends_on_all(c.name, needed) for c in consumers(target))

    def _depends_on_all(self, name: str, needed: set[str]) -> bool:
        """Whether op `name` depends on every op of `needed` (or is one): asked of hundreds of ops per graph.

        Each needed op's descendants are walked once and kept. Asking for each target's ancestors
        instead was a walk per question: on a 5,100-op MLP step, 3,376 walks took 2 s of its trace.
        """
        for op in needed:
            below = self._descendants.get(op)
            if below is None:
                below = self._descendants[op] = frozenset(self.index.descendants([op]))
            if name not in below:
                return False
        return True

    def end_stamp(self, op: tf.Operation, name: str) -> tf.Tensor:
        """The moment `op` has finished: after it, and before its consumers."""
        stamp = self.stamp(finished(op), name)
        self.make_wait(consumers(op), stamp)
        return stamp

    def last_of_stamp(self, waits: list[Wait], also_after: list[tf.Tensor], name: str, every_op_runs: bool = False) -> tf.Tensor:
        """The moment every op of `waits` has finished ("all gradients ready").

        When one of them (the last gradient) already depends on all the others, the stamp
        waits on it alone and its consumers wait on the stamp, where that adds them no
        dependency: the stamp is then the only op the last gradient makes ready. Were it ready
        next to the gradient's update, TensorFlow's executor would hand the update to its
        thread pool (a thread wakeup on the step's path: measured +100-250 µs per step in an
        MLP's first ~150 steps, while it still counts every kernel as expensive). Else (no
        such op) it waits on all of them; and where `every_op_runs` (a `tf.function`'s graph
        without all-reduces, not in a loop: each call runs every gradient and update, so no run
        can be made to run more), the topologically last gradient's consumers (its update, past the
        IdentityN Keras puts all gradients through: `op_neighbours.consumers_past_forwarding`) wait on it too:
        they wait a little longer for the other gradients, nearly always done by then, and the
        stamp no longer waits behind that update (tests/test_tf2_accuracy.py). Not in a loop's
        body: there the held update let a call's iterations overlap (the `tf.range` loop's Data
        Aug Bound broke in 2 runs of about 5, as the batch's reads did, `first_successor_stamp`).
        """
        ops = list(dict.fromkeys(w.op if isinstance(w, tf.Tensor) else w for w in waits))
        topo = self.index.topo_pos
        last = max(ops, key=lambda op: topo[self.index.id_of(op.name)]) if ops else None  # the only candidate
        if last is None or not {op.name for op in ops} <= self.index.ancestors([last.name]):
            stamp = self.stamp(waits + list(also_after), name)
            if last is not None and every_op_runs:
                feeding = self.index.ancestors([op.name for op in ops])  # a consumer among them would make a cycle
                self.make_wait([c for c in consumers_past_forwarding(last) if c.name not in feeding], stamp)
            return stamp
        stamp = self.stamp(finished(last) + list(also_after), name)
        before = [last] + [t.op for t in also_after]
        self.make_wait([c for c in consumers(last) if self._wait_is_safe(c, before)], stamp)
        return stamp

    def first_successor_stamp(self, op: tf.Operation, name: str, also_after: tf.Tensor) -> tf.Tensor:
        """The end of an async op (GetNext): made its only successor ready when it completes.

        TensorFlow hands every ready successor of an async op to its thread pool, in
        edge order, and ours was added last; so each consumer waits on the stamp:
        directly, except a fusable compute op (a control input would block its fusion),
        which waits through its variable reads where it has some. Not through the reads
        of any other consumer: in a `tf.function` the data input's successors include the
        function's final NoOp (automatic control dependencies), whose inputs are every
        stateful op, so an MLP's 452 optimizer and layer reads were all held behind the
        batch, and all made ready at once, between the batch and the first layer. Except in
        a loop's body (Keras 2's steps_per_execution loop): there, reads freed from the batch
        let a call's first iterations overlap (run numbers 3, 1, 2 and a broken Data Aug Bound
        in about 2 of 5 runs of that style), so each consumer still waits through its reads.
        """
        stamp = self.stamp(finished(op) + [also_after], name)
        for consumer in consumers(op):
            fusable = consumer.type in FUSED_COMPUTE_TYPES
            if not fusable and not self.in_a_loop:
                self.make_wait([consumer], stamp)
                continue
            reads = [p for p in producers(consumer) if is_variable_read(p) and self._wait_is_safe(p, [op])]
            # Through its reads: a fusable op, and in a loop's body any consumer that has some (see the docstring).
            self.make_wait(reads if fusable or reads else [consumer], stamp)
        return stamp


def build_probes(
    graph: tf.Graph, points: TracePoints, index: GraphIndex, *, user_bp: bool, may_rewire: bool, clock: Clock = timestamp_clock,
    step_shared: bool = False, tables: str | None = None, count_lock: bool = False, in_a_loop: bool = False,
) -> GraphProbes:
    """Add the probe ops for `points` to `graph` (temporarily unfinalising a finalised graph).

    Points that are not ancestors of the train op are left out (a probe there would
    make the training step run an op it does not run). `user_bp`: the user named
    bp_point, so BP End is that op's end rather than "all gradients ready". `step_shared`: other
    sessions may write the global step (see `ring`). `tables`: a tf.function's ring tables (see
    `ring.build_ring`); its rows then carry no global step (a function's step variable is a capture,
    and the run counter numbers its iterations). `count_lock`: calls of the function may run at once
    (it is, or runs in, a loop's body), so its run counter is taken under a lock (`ring`).
    """
    if points.iteration_end is None:
        raise ValueError("cannot build probes without an iteration end (train op)")
    on_path = frozenset(index.ancestors([points.iteration_end, *points.iteration_end_also]))
    finalized = graph.finalized
    if finalized:
        tf_private.unfinalize(graph)  # Estimator/MonitoredSession finalise before the session exists.
    try:
        with graph.as_default(), tf.name_scope(PROBE_SCOPE), tf.device("/cpu:0"):
            data_inputs = frozenset(n for n in points.get_next if n in on_path)
            compute = [n for n in (points.fp, *sorted(data_inputs)) if n is not None and n in on_path]
            home = task_of(graph.get_operation_by_name(compute[0])) if compute else None
            builder = _Builder(graph, index, may_rewire, clock, data_inputs, home, in_a_loop=in_a_loop, feedable=tables is None)
            return _build(builder, points, on_path, user_bp, step_shared, tables, count_lock)
    finally:
        if finalized:
            graph.finalize()


def _build(builder: _Builder, points: TracePoints, on_path: frozenset[str], user_bp: bool, step_shared: bool,
           tables: str | None, count_lock: bool) -> GraphProbes:
    get_op = builder.graph.get_operation_by_name
    stamps: list[tf.Tensor] = []
    reads = [get_op(n) for n in points.get_next if n in on_path and get_op(n).type not in FED_INPUT_TYPES]
    if len(reads) > MAX_GET_NEXT_PAIRS:
        builder.notes.append(f"{len(reads)} data inputs feed the step, and a step-trace row holds at most {MAX_GET_NEXT_PAIRS}: "
                             f"GetNext is timed on the first {MAX_GET_NEXT_PAIRS} ({reads[MAX_GET_NEXT_PAIRS].name} and later are not)")
        reads = reads[:MAX_GET_NEXT_PAIRS]
    read_ends: list[tf.Tensor] = []
    for op in reads:
        stamps.append(builder.start_stamp(op, "get_next_start"))
        # After the start too: in a run that feeds GetNext's outputs, GetNext does not run.
        read_ends.append(builder.first_successor_stamp(op, "get_next_end", also_after=stamps[-1]))
        stamps.append(read_ends[-1])
    chain_tail: list[tf.Tensor] = list(read_ends)
    has_fp = points.fp is not None and points.fp in on_path
    if has_fp:
        # After the data inputs the fp op reads (in a multi-replica graph, its own replica's, not the others').
        feeding = builder.index.ancestors([points.fp])
        own_reads = [end for end, read in zip(read_ends, reads) if read.name in feeding]
        # An fp op that reads no batch (a GAN's generator, on noise) still starts after the step's reads, so
        # GetNext End <= FP Start in every row, as upstream's FP (a consumer of the batch) has it. Only in a
        # function: every call runs its read, so holding the generator's weight reads behind it adds no work.
        noise_fed = not own_reads and bool(read_ends) and tables is not None
        fp_stamp = builder.start_stamp(get_op(points.fp), "fp_start", also_after=read_ends if noise_fed else own_reads,
                                       every_op_runs=noise_fed)
        stamps.append(fp_stamp)
        chain_tail = [fp_stamp]
    bp_waits = _bp_waits(builder.graph, points, on_path, user_bp)
    has_bp = bool(bp_waits)
    if has_bp:
        if user_bp:
            bp_stamp = builder.end_stamp(bp_waits[0], "bp_end")
        else:
            # "All gradients ready": a consumer is rewired only where it already waits on every
            # gradient (see `last_of_stamp`); elsewhere that would add dependencies.
            every_op_runs = tables is not None and not builder.in_a_loop and not any(
                n in on_path for group in points.all_reduce for n in group)
            bp_stamp = builder.last_of_stamp(bp_waits, chain_tail, "bp_end", every_op_runs)
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
    also = [get_op(n) for n in points.iteration_end_also]
    # Gated: the row is written just before the train op, once everything it waits on is done.
    # Not gated: the row's write is fetched (a function runs it), after the train op. And after the other ops
    # a function's call runs where the train op does not wait on them all (`TracePoints.iteration_end_also`):
    # gating the train op on those would hold it behind ops that may wait on it.
    gated = builder.may_wire(train_op) and not also
    waits: list[Wait] = [t for t in train_op.inputs if t.op.type not in FED_INPUT_TYPES] + list(train_op.control_inputs) if gated else [train_op, *also]
    builder.waited.update((w.op if isinstance(w, tf.Tensor) else w).name for w in waits)
    before_end = builder.gate(waits + chain_tail + reduce_ends, "iteration_ready")
    has_step = points.global_step is not None and tables is None
    ring = build_ring(
        before_end,
        lambda after: builder.stamp(after, "iteration_end"),
        stamps,
        StepKey(points.global_step, train_op, gated, step_shared) if has_step else None,
        tables,
        count_lock,
    )
    if gated:
        tf_private.add_control_input(train_op, ring.write)
    else:
        builder.not_rewired.append(train_op.name)
    return GraphProbes(
        shape=RecordShape(len(reads), has_fp, has_bp, len(groups), has_step),
        ring=ring,
        gated=gated,
        iteration_end=train_op.name,
        waited_ops=frozenset(builder.waited),
        not_rewired=tuple(builder.not_rewired),
        notes=tuple(builder.notes),
    )


def _bp_waits(graph: tf.Graph, points: TracePoints, on_path: frozenset[str], user_bp: bool) -> list[Wait]:
    """The user's bp op, or (automatic points) every gradient tensor feeding the updates."""
    if user_bp and points.bp is not None:
        return [graph.get_operation_by_name(points.bp)] if points.bp in on_path else []
    if points.bp_inputs:
        return [graph.get_tensor_by_name(t) for t in dict.fromkeys(points.bp_inputs) if t.rsplit(":", 1)[0] in on_path]
    return [graph.get_operation_by_name(points.bp)] if points.bp is not None and points.bp in on_path else []
