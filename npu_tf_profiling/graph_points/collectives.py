"""All-reduce groups (rule 7 of docs/trace_points.md).

Communication ops (all-reduce, gather, all-to-all) that the backward pass
feeds are grouped the way they would run: consecutive ones in topological
order form one group, and backward compute between two of them starts a new
group. A Horovod or collective optimizer that reduces after tf.gradients
gives one group; per-layer hooks give one group per layer.
"""
from __future__ import annotations

from dataclasses import dataclass

from npu_tf_profiling.graph_points import optypes
from npu_tf_profiling.graph_points.index import GraphIndex, ids_in, mask_of
from npu_tf_profiling.raw_format.training_frame import MAX_REDUCE_PAIRS


@dataclass(frozen=True)
class Collectives:
    """ops: communication ops in the backward region, topological order.
    groups: ``ops`` split into groups, in order.
    after: mask of backward ops computed from an all-reduce's output (None without one).
    reasons: sentences for TracePoints.reasons.
    """

    ops: tuple[int, ...] = ()
    groups: tuple[tuple[int, ...], ...] = ()
    after: bytes | None = None
    reasons: tuple[str, ...] = ()


def find_collectives(index: GraphIndex, in_step: bytes, backward: bytes, is_compute: list[bool]) -> Collectives:
    """Rule 7 for the communication ops the step runs (``in_step``)."""
    comm = index.sort_topo(i for i, t in enumerate(index.types) if t in optypes.COLLECTIVE_TYPES and in_step[i])
    ops = tuple(c for c in comm if backward[c])
    outside = tuple(c for c in comm if not backward[c])
    groups: tuple[tuple[int, ...], ...] = ()
    after: bytes | None = None
    reasons = []
    if ops:
        after = bytes(index.reach(ops, backward=False, data_only=True, within=backward))
        groups = _groups(index, ops, backward, after, is_compute)
        reasons.append(f"all_reduce = {len(ops)} communication op(s) fed by gradients in {len(groups)} group(s): "
                       "consecutive in topological order, split by backward compute ops")
        if len(groups) > MAX_REDUCE_PAIRS:
            reasons.append(f"warning: {len(groups)} all-reduce groups, and a step-trace row holds at most {MAX_REDUCE_PAIRS}: "
                           f"groups {MAX_REDUCE_PAIRS} to {len(groups)} are timed as one (the last Reduce pair)")
            groups = groups[: MAX_REDUCE_PAIRS - 1] + (tuple(op for group in groups[MAX_REDUCE_PAIRS - 1 :] for op in group),)
    if outside:
        reasons.append(f"{len(outside)} communication op(s) outside the backward pass "
                       f"(e.g. {index.names[outside[0]]}) are not listed in all_reduce")
    return Collectives(ops, groups, after, tuple(reasons))


def _groups(index: GraphIndex, ops: tuple[int, ...], backward: bytes, after: bytes,
            is_compute: list[bool]) -> tuple[tuple[int, ...], ...]:
    """``ops`` split wherever a backward compute op that is not fed by an
    all-reduce comes between two of them in topological order."""
    is_comm = mask_of(len(index), ops)
    groups: list[tuple[int, ...]] = []
    current: list[int] = []
    for i in index.sort_topo(ids_in(backward)):
        if is_comm[i]:
            current.append(i)
        elif is_compute[i] and not after[i] and current:
            groups.append(tuple(current))
            current = []
    if current:
        groups.append(tuple(current))
    return tuple(groups)
