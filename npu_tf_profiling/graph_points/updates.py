"""Gradient ops and optimizer updates (rules 1 and 2 of docs/trace_points.md).

Everything else is measured from these two sets: the iteration end is the op
that runs the updates, and the backward pass lies between the loss and them.
Assign-like ops are counted only when a gradient flows into their value,
because the same op types also initialise variables and update batch-norm
statistics; a value that only decides *whether* an op runs (a loss-scale
cond's is-finite check) does not count as flowing into it.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from npu_tf_profiling.graph_points import functions, optypes
from npu_tf_profiling.graph_points.index import GraphIndex

BACKWARD_FUNCTION = "__backward_"  # in the name of the function TensorFlow builds for another's gradient


@dataclass(frozen=True)
class Updates:
    """What rules 1 and 2 found, anywhere in the graph (op ids).

    gradient_ops: ops in a gradient scope, in GraphDef order.
    ops: optimizer updates, in GraphDef order; a function-call op whose body
        updates variables counts as one update.
    via_calls: the members of ``ops`` that are such call ops.
    called_types: op types that are direct calls of updating library functions.
    """

    gradient_ops: tuple[int, ...]
    ops: tuple[int, ...]
    via_calls: frozenset[int]
    called_types: frozenset[str]

    def value_inputs(self, index: GraphIndex, op: int) -> list[tuple[int, int]]:
        """The (producer, port) inputs of update ``op`` that carry values."""
        return value_inputs(index, op, self.called_types)


def value_inputs(index: GraphIndex, op: int, called_types: frozenset[str]) -> list[tuple[int, int]]:
    """The (producer, port) inputs of an update that carry values: not the
    variable of an Assign/Apply, not the predicate or branch index of an
    If/Case (a loss-scale cond's is-finite check is not a gradient)."""
    pairs = list(zip(index.data_in[op], index.data_port[op]))
    t = index.types[op]
    if t in functions.PASS_ALL_INPUTS_TYPES or (t not in functions.FUNCTION_CALL_TYPES and t in called_types):
        return pairs
    if t in functions.FUNCTION_CALL_TYPES and pairs:
        # The predicate is often passed into the branches as well.
        return [p for p in pairs[1:] if p != pairs[0]]
    return pairs[1:]


def find_updates(index: GraphIndex, graph_def: Any) -> Updates:
    """Rules 1 and 2 on the whole graph, including v2 cond/while bodies
    (``graph_def``'s function library)."""
    types = index.types
    type_set = set(types)
    grad_search = optypes.GRADIENT_NAME_RE.search
    gradient_ops = [i for i, name in enumerate(index.names) if "grad" in name and grad_search(name)]
    gradient_ops = sorted(set(gradient_ops) | set(_backward_calls(index, graph_def, type_set)))
    apply_types = {t for t in type_set if optypes.is_apply_type(t)}
    assign_types = type_set & optypes.ASSIGN_TYPES
    called_types, call_kinds = _updating_calls(index, graph_def, type_set)
    grad_desc: bytearray | None = None
    found: list[int] = []
    for i, t in enumerate(types):
        if t in apply_types or call_kinds.get(i) == functions.APPLY:
            found.append(i)
        elif t in assign_types or i in call_kinds:
            if grad_desc is None:
                grad_desc = index.reach(gradient_ops, backward=False, values_only=True)
            if any(grad_desc[j] for j, _ in value_inputs(index, i, called_types)):
                found.append(i)
    return Updates(
        gradient_ops=tuple(gradient_ops),
        ops=tuple(found),
        via_calls=frozenset(i for i in found if i in call_kinds),
        called_types=called_types,
    )


def _backward_calls(index: GraphIndex, graph_def: Any, type_set: set[str]) -> list[int]:
    """Calls of a function's gradient (TensorFlow names it ``__backward_<function>_<n>``). A layer whose
    ``call`` is a `tf.function` is differentiated by such a call, outside any gradient name scope
    (it is named ``PartitionedCall``): its outputs are that layer's weight gradients."""
    if not type_set & functions.FUNCTION_CALL_TYPES:
        return []
    nodes = graph_def.node
    return [i for i, t in enumerate(index.types) if t in functions.FUNCTION_CALL_TYPES
            and any(BACKWARD_FUNCTION in name for name in functions.called_functions(nodes[i]))]


def _updating_calls(index: GraphIndex, graph_def: Any, type_set: set[str]) -> tuple[frozenset[str], dict[int, str]]:
    """Op types that directly call updating functions, and the call ops
    (If/While/PartitionedCall... or direct calls) whose function bodies
    update variables: op id -> APPLY/ASSIGN."""
    library = getattr(graph_def, "library", None)
    if library is None or not library.function:
        return frozenset(), {}
    updating = functions.updating_functions(library)
    if not updating:
        return frozenset(), {}
    called_types = frozenset(type_set & set(updating))
    call_types = (type_set & functions.FUNCTION_CALL_TYPES) | called_types
    found = {}
    for i, t in enumerate(index.types):
        if t in call_types:
            kind = functions.call_update_kind(index.node_def(i), updating)
            if kind is not None:
                found[i] = kind
    return called_types, found
