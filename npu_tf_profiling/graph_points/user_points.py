"""User-given fp/bp names (rule 9 of docs/trace_points.md).

A name the user typed always wins over discovery, but two kinds of mistake
are caught before a profiling run is wasted on them: a name that is not in
the graph is an error listing the closest op names, and a name that exists
but would never mark what the user wants (an initializer, an FP inside the
backward pass) is used with a warning.
"""
from __future__ import annotations

from dataclasses import dataclass

from npu_tf_profiling.graph_points.errors import unknown_op_error
from npu_tf_profiling.graph_points.index import GraphIndex
from npu_tf_profiling.graph_points.iteration_end import IterationEnd
from npu_tf_profiling.graph_points.regions import Regions


# Per kind: what goes wrong when the op is in the other pass, and when it is in neither.
_MISPLACED = {
    "fp_point": ("is in the backward pass (between the loss and the optimizer updates), so fp_start would be "
                 "recorded after the forward pass",
                 "runs in the training step but not on the forward path to the loss"),
    "bp_point": ("is in the forward pass (it feeds the loss), so bp_end would be recorded before the backward "
                 "pass ends",
                 "runs in the training step but not between the loss and the optimizer updates"),
}


@dataclass(frozen=True)
class UserPoint:
    """The op a user-given ``fp_point``/``bp_point`` names, with the reasons and warnings to report."""

    op: int
    reasons: tuple[str, ...]


def resolve_user_point(index: GraphIndex, kind: str, name: str, step: IterationEnd, regions: Regions) -> UserPoint:
    """``kind`` is "fp_point" or "bp_point"; ``name`` an op name (or a tensor
    name, meaning its op). Raises TracePointsError when it is not in the graph."""
    op = index.get_id(name)
    if op is None:
        raise unknown_op_error(kind, name, index.names)
    reasons = []
    if index.names[op] != name:
        reasons.append(f"{kind} {name!r} is a tensor name; using its op {index.names[op]}")
    reasons.append(f"{kind.split('_')[0]} = {index.names[op]}: given as {kind}")
    warning = _off_path_warning(index, kind, op, step, regions)
    if warning:
        reasons.append(warning)
    return UserPoint(op, tuple(reasons))


def _off_path_warning(index: GraphIndex, kind: str, op: int, step: IterationEnd, regions: Regions) -> str:
    """Why ``op`` would not mark the start of the forward (fp_point) or the
    end of the backward pass (bp_point); empty when it would."""
    name = index.names[op]
    if not regions.is_training:
        return f"warning: {kind} {name} is in a graph with no training step; it will not be traced"
    if not step.in_step[op]:
        train_name = index.names[step.op] if step.op is not None else None
        return (f"warning: {kind} {name} does not run in the training step (it is not an ancestor of "
                f"{train_name}; e.g. an initializer or an op of another model), so it will never be traced")
    wrong, own = (regions.backward, regions.forward) if kind == "fp_point" else (regions.forward, regions.backward)
    in_wrong, not_in_own = _MISPLACED[kind]
    if wrong[op]:
        return f"warning: {kind} {name} {in_wrong}"
    if not own[op]:
        return f"warning: {kind} {name} {not_in_own}"
    return ""
