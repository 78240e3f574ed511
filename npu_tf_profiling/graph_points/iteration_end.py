"""The iteration end and the global step (rule 3 of docs/trace_points.md).

The iteration end is the op the training loop runs once per step. What the
script said wins (the ``train_op`` argument, then the graph's ``train_op``
collection); otherwise it is the sink op that runs the most optimizer
updates. It bounds everything after it: only ops it depends on can be fp,
bp or data inputs, so a test tower or an initializer is never picked.

In a `tf.function` only what its outputs and stateful ops depend on runs
(`LoadedGraph.runs`): a sink outside that is pruned, and an iteration end
there never fires. A GAN's step has such sinks, compute ops at that: the
generator's forward pass inside the critic's tape makes gradients nothing
reads. So there the sinks are taken within the ops that run, and the
function's outputs (plumbing Identities, but the ones that wait on every
stateful op through automatic control dependencies) are candidates too.

A function that returns nothing (TensorFlow's DCGAN tutorial: two tapes, two
`apply_gradients`, no return) has no op that waits on all it runs: any sink
runs a few updates only, and a stamp there came a median 100 ms before the
call returned. So in a function the end also waits on ``also``: the sinks of
what the call runs that the chosen op does not wait on. The step's regions,
and so BP End, then cover every update of every tape and optimizer.
"""
from __future__ import annotations

from dataclasses import dataclass

from npu_tf_profiling.graph_points import optypes
from npu_tf_profiling.graph_points.errors import unknown_op_error
from npu_tf_profiling.graph_points.index import GraphIndex, ids_in, mask_of
from npu_tf_profiling.graph_points.loading import LoadedGraph
from npu_tf_profiling.graph_points.points import counted
from npu_tf_profiling.graph_points.updates import Updates

_MAX_SINK_CANDIDATES = 64


@dataclass(frozen=True)
class IterationEnd:
    """op: the iteration end (None: no optimizer update anywhere, an inference graph).
    in_step: mask of the ops it depends on (itself included); all zero without one.
    updates: the optimizer updates it runs, in GraphDef order.
    notes: warnings for the reasons (a train_op collection that runs no update).
    also: in a function, the ops every call runs (sinks of what it runs) that ``op`` does not
        wait on: the end is after them too (see the module docstring).
    """

    op: int | None
    reason: str
    in_step: bytes
    updates: tuple[int, ...]
    notes: tuple[str, ...] = ()
    also: tuple[int, ...] = ()


@dataclass(frozen=True)
class GlobalStep:
    """The global-step variable (None when the graph has none)."""

    op: int | None
    reason: str


def find_iteration_end(index: GraphIndex, loaded: LoadedGraph, updates: Updates,
                       train_op: str | None = None) -> IterationEnd:
    """Rule 3: ``train_op`` when given (TracePointsError when not in the graph), else detected."""
    notes: list[str] = []
    op, reason = _choose(index, loaded, updates.ops, train_op, notes)
    if op is None:
        return IterationEnd(None, reason, bytes(len(index)), (), tuple(notes))
    in_step = index.reach([op], backward=True)
    also = _runs_not_waited_on(index, loaded, in_step)
    if also:
        waited = sum(1 for u in updates.ops if in_step[u])
        in_step = index.reach([op, *also], backward=True)
        reason += (f"; the end also waits on the {counted(len(also), 'other op')} every call runs "
                   f"(e.g. {index.names[also[0]]}), and so on {sum(1 for u in updates.ops if in_step[u]) - waited} more "
                   "optimizer updates: nothing the function returns waits on all it runs")
    return IterationEnd(op, reason, bytes(in_step), tuple(u for u in updates.ops if in_step[u]), tuple(notes), also)


def _runs_not_waited_on(index: GraphIndex, loaded: LoadedGraph, in_step: bytearray) -> tuple[int, ...]:
    """In a function: the sinks of what every call runs that `in_step` misses (empty elsewhere, or when none)."""
    runs = [i for i in (index.get_id(n) for n in loaded.runs) if i is not None]
    if not runs:
        return ()
    live = index.reach(runs, backward=True)
    data_out, ctrl_out = index.data_out, index.ctrl_out
    return tuple(i for i in ids_in(live) if not in_step[i]
                 and not any(live[j] for j in data_out[i]) and not any(live[j] for j in ctrl_out[i]))


def _choose(index: GraphIndex, loaded: LoadedGraph, updates_all: tuple[int, ...], train_op: str | None,
            notes: list[str]) -> tuple[int | None, str]:
    names = index.names
    if train_op:
        found = index.get_id(train_op)
        if found is None:
            raise unknown_op_error("train_op", train_op, names)
        return found, f"iteration_end = {names[found]}: given as train_op"
    hinted = [i for i in (index.get_id(h) for h in loaded.train_ops) if i is not None]
    if hinted:
        update_mask = mask_of(len(index), updates_all)
        counts = {h: sum(1 for i in ids_in(index.reach([h], backward=True)) if update_mask[i]) for h in hinted}
        best = max(hinted, key=lambda h: (counts[h], index.topo_pos[h]))
        if counts[best] or not updates_all:
            why = ("the graph's train_op collection" if len(hinted) == 1 else
                   f"of the {len(hinted)} ops in the train_op collection, the one running the most optimizer "
                   f"updates ({counts[best]})")
            if not index.data_out[best] and not index.ctrl_out[best]:
                return best, f"iteration_end = {names[best]}: {why}"
            # Consumed inside the graph (an optimizer built inside a v1
            # tf.cond, as loss scaling does): the step is the sink that runs it.
            ranked, sink_counts = _rank_sinks(index, [best], updates_all)
            # Only a sink that can be the step (a NoOp group, an update, compute) replaces it:
            # a read of the variable it assigns (MultiWorkerMirroredStrategy's global-step
            # increment is read back) is plumbing nobody runs as the step.
            top_type = index.types[ranked[0]] if ranked else ""
            if ranked and sink_counts[ranked[0]] >= counts[best] and (
                    top_type == "NoOp" or not optypes.is_plumbing_type(top_type)):
                return ranked[0], (
                    f"iteration_end = {names[ranked[0]]}: the sink op that runs {names[best]} ({why}), "
                    "which is itself consumed inside the graph"
                )
            return best, f"iteration_end = {names[best]}: {why}"
        notes.append(
            "warning: the train_op collection (" + ", ".join(names[h] for h in hinted)
            + ") runs no optimizer update; the iteration end was detected from the graph instead"
        )
    if not updates_all:
        return None, ""
    runs = tuple(i for i in (index.get_id(n) for n in loaded.runs) if i is not None)
    ranked, counts = _rank_sinks(index, updates_all, updates_all, runs)
    best = ranked[0]
    reason = (
        f"iteration_end = {names[best]}: the sink op that runs the most optimizer updates "
        f"({counts[best]} of {len(updates_all)})"
    )
    if runs:
        reason += (", of the ops every call runs (the function's outputs and stateful ops "
                   "and what they depend on; TensorFlow prunes the rest)")
    others = [s for s in ranked[1:] if counts[s] > 0][:3]
    if others:
        reason += "; other candidates: " + ", ".join(f"{names[s]} ({counts[s]})" for s in others)
    return best, reason


def _rank_sinks(index: GraphIndex, starts: list[int] | tuple[int, ...],
                updates_all: tuple[int, ...], runs: tuple[int, ...] = ()) -> tuple[list[int], dict[int, int]]:
    """Sink ops (no consumers) downstream of ``starts``, best train-op
    candidate first: most updates run, then a train-like name, then later.

    ``runs``: the ops every run executes (a function's outputs and stateful ops), when known; the
    sinks are then those of the ops that run (none of their consumers runs), and ``runs`` themselves
    are never set aside as plumbing: a function's output is what its caller runs."""
    downstream = index.reach(starts, backward=False)
    data_out, ctrl_out, types = index.data_out, index.ctrl_out, index.types
    if runs:
        live = index.reach(runs, backward=True)
        downstream = bytearray(a & b for a, b in zip(downstream, live))
        sinks = [i for i in ids_in(downstream)
                 if not any(live[j] for j in data_out[i]) and not any(live[j] for j in ctrl_out[i])]
    else:
        sinks = [i for i in ids_in(downstream) if not data_out[i] and not ctrl_out[i]]
    # An unused read_value() of an assign is a sink too, but nobody runs it
    # as the step: prefer NoOps (tf.group), updates and compute ops.
    outputs = set(runs)
    real = [i for i in sinks if types[i] == "NoOp" or i in outputs or not optypes.is_plumbing_type(types[i])]
    sinks = real or sinks or ids_in(downstream)  # no sink at all: a cycle, consider everything
    preferred = optypes.TRAIN_OP_NAME_RE.search
    names, pos = index.names, index.topo_pos
    if len(sinks) > _MAX_SINK_CANDIDATES:
        sinks = sorted(sinks, key=lambda i: (preferred(names[i]) is None, -pos[i]))[:_MAX_SINK_CANDIDATES]
    around_updates = index.reach(updates_all, backward=False)
    for u in updates_all:
        around_updates[u] = 1
    counts = {}
    for sink in sinks:
        reached = index.reach([sink], backward=True, within=around_updates)
        counts[sink] = sum(1 for u in updates_all if reached[u])
    ranked = sorted(sinks, key=lambda i: (counts[i], preferred(names[i]) is not None, pos[i]), reverse=True)
    return ranked, counts


def find_global_step(index: GraphIndex, loaded: LoadedGraph) -> GlobalStep:
    """The graph's ``global_step`` collection, else a variable named ``global_step``."""
    for hint in loaded.global_steps:
        found = index.get_id(hint)
        if found is not None:
            return GlobalStep(found, f"global_step = {index.names[found]}: the graph's global_step collection")
    for i, (name, t) in enumerate(zip(index.names, index.types)):
        if t in optypes.VARIABLE_TYPES and (name == "global_step" or name.endswith("/global_step")):
            return GlobalStep(i, f"global_step = {name}: a {t} named global_step")
    return GlobalStep(None, "")
