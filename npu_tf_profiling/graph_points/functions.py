"""Which function-calling ops update variables inside their bodies.

With control flow v2 a ``tf.cond`` is an ``If``/``StatelessIf`` op whose
branches are functions in the GraphDef's library. Wrappers that apply the
optimizer conditionally (loss scaling skips the step on overflow, gradient
accumulation applies every k steps) therefore hide the ``Apply*`` ops inside
a function: at the outer level the graph would look like inference. Discovery
treats such a call op as the update it contains; everything else about
functional ops stays "one compute op at the outer level".
"""
from __future__ import annotations

from typing import Any

from npu_tf_profiling.graph_points import optypes

# Op types that call functions through attrs (then_branch, body, f, branches...).
FUNCTION_CALL_TYPES = frozenset({
    "If", "StatelessIf", "While", "StatelessWhile", "Case", "StatelessCase",
    "PartitionedCall", "StatefulPartitionedCall", "For", "RemoteCall",
})

# Call ops whose inputs are all function arguments (If/Case take a predicate
# or branch index first).
PASS_ALL_INPUTS_TYPES = frozenset({"While", "StatelessWhile", "PartitionedCall", "StatefulPartitionedCall",
                                   "For", "RemoteCall"})

APPLY = "apply"
ASSIGN = "assign"


def called_functions(node: Any) -> list[str]:
    """Names of the library functions a NodeDef calls (directly or via attrs)."""
    names = []
    for value in node.attr.values():
        if value.HasField("func"):
            names.append(value.func.name)
        elif value.HasField("list"):
            names.extend(f.name for f in value.list.func)
    return names


def updating_functions(library: Any) -> dict[str, str]:
    """Library functions that (transitively) update variables: name -> APPLY
    when an optimizer kernel runs inside, ASSIGN when only assign-like ops do."""
    functions = {f.signature.name: f for f in library.function}
    if not functions:
        return {}
    own: dict[str, str] = {}
    calls: dict[str, set[str]] = {}
    for name, function in functions.items():
        kinds = set()
        callees: set[str] = set()
        for node in function.node_def:
            if optypes.is_apply_type(node.op):
                kinds.add(APPLY)
            elif node.op in optypes.ASSIGN_TYPES:
                kinds.add(ASSIGN)
            if node.op in functions:
                callees.add(node.op)
            if node.op in FUNCTION_CALL_TYPES:
                callees.update(c for c in called_functions(node) if c in functions)
        if kinds:
            own[name] = APPLY if APPLY in kinds else ASSIGN
        calls[name] = callees
    # propagate to callers until nothing changes (call graphs are small)
    changed = True
    while changed:
        changed = False
        for name, callees in calls.items():
            best = own.get(name)
            for callee in callees:
                kind = own.get(callee)
                if kind == APPLY and best != APPLY or kind == ASSIGN and best is None:
                    best = kind
            if best != own.get(name):
                own[name] = best  # type: ignore[assignment]
                changed = True
    return own


def call_update_kind(node: Any, updating: dict[str, str]) -> str | None:
    """APPLY/ASSIGN when the call op ``node`` runs an updating function."""
    names = called_functions(node)
    if node.op in updating:
        names.append(node.op)
    kinds = {updating[n] for n in names if n in updating}
    if APPLY in kinds:
        return APPLY
    return ASSIGN if kinds else None


def training_functions(library: Any) -> frozenset[str]:
    """Library functions that hold a training step themselves: variable updates and backprop's ops
    (a gradient scope) in their own body. An XLA-compiled step called from a traced function is one
    (the caller cannot see its gradients flow into the updates, as discovery's rules need); an
    evaluation step's metric updates, with no gradients, are not."""
    updating = updating_functions(library)
    return frozenset(
        function.signature.name for function in library.function
        if function.signature.name in updating and any(optypes.GRADIENT_NAME_RE.search(n.name) for n in function.node_def)
    )
