"""Functions that call the training step rather than being it: what their rows time.

Two kinds of caller get probes of their own, with no FP/BP points:

* **around a compiled step** (`compiled_step_call`, `around_call`): the step is XLA-compiled
  (`jit_compile=True`), so nothing can be stamped inside it; the caller (Keras
  2's ``train_function``, Keras 3's ``multi_step_on_iterator``) reads the batch
  and calls it, so its rows time the iteration: GetNext and the iteration end.
* **feeding a probed step** (`may_feed_a_step`, `fed_step_call`): the caller
  reads the batch and calls a step that is probed but has no read of its own
  (Keras 3's ``multi_step_on_iterator`` around ``one_step_on_data``). The
  caller's rows are not iterations: each gives its GetNext to the step's row of
  the same call (`reader.FunctionModel.feeder`).

A step may have several feeders: Keras 3's ``steps_per_execution`` loop reads
the first batch before its While and each next one at the end of the loop's
body, in a cond branch (``lambda: iterator.get_next_as_optional()``). A branch
that only reads (`reads_only`) is probed as a reader of its own (`read_points`),
keyed to the function it is traced in; when that function turns out to feed a
step, the branch's reads feed it too. Within one call, the k-th step takes
the call's k-th read (`fed_batches`).
"""
from __future__ import annotations

from typing import Any, Iterable

import tensorflow as tf

from npu_tf_profiling.graph_points import GraphIndex, TracePoints, functions, optypes

XLA_ATTRIBUTE = "_XlaMustCompile"
MAX_CALL_DEPTH = 3  # a loop's body, a branch in it, the step's call: Keras 3's steps_per_execution loop
TABLES_PREFIX = "npu_tf_profiling_"  # every tf.function ring's tables are named from it (transform._model_for)
JIT_CALLER_REASON = ("fp, bp = N/A: the updates are in an XLA-compiled function (jit_compile=True) this function calls; "
                     "no stamp op can run inside it, so this row times the call (GetNext, iteration end)")
READ_BRANCH_REASON = ("this cond branch of {function} reads the next batch and nothing else (Keras 3's "
                      "steps_per_execution loop): its reads are given to the step that function calls")
FEEDER_REASON = ("this function reads the batch and calls the training step {step}: its GetNext is given to that "
                 "step's rows (the row of the same call); it has no rows of its own")


def compiled_calls(graph: tf.Graph) -> list[tf.Operation]:
    """The graph's calls of XLA-compiled functions (a cheap scan: call ops' attributes)."""
    calls = []
    for op in graph.get_operations():
        if op.type in functions.FUNCTION_CALL_TYPES:
            attr = op.node_def.attr.get(XLA_ATTRIBUTE)
            if attr is not None and attr.b:
                calls.append(op)
    return calls


def compiled_step_call(graph: tf.Graph, library: Any) -> tf.Operation | None:
    """The call of an XLA-compiled training step (one of `library`'s functions), when this graph makes one.
    The caller checks first that the graph updates nothing itself."""
    calls = compiled_calls(graph)
    if not calls:
        return None
    training = functions.training_functions(library)
    stepping = [op for op in calls if set(functions.called_functions(op.node_def)) & training]
    return stepping[-1] if len(stepping) == 1 else None


def around_call(graph: tf.Graph, index: GraphIndex, found: TracePoints, call: tf.Operation, reason: str) -> TracePoints:
    """The points of a graph that calls the step: its reads, and as iteration end the output
    that waits on the call (automatic control dependencies put the call before it); no FP/BP.
    A caller returning nothing (a `tf.function` step that reads the batch and calls an inner one doing
    the updates) has no such output: its end is then the call itself, and, as `also`, the row is
    written after it (not before, as a gated end's)."""
    also: tuple[str, ...] = ()
    if found.iteration_end is not None and call.name in index.ancestors([found.iteration_end]):
        end = found.iteration_end
    else:
        ends = [t.op.name for t in graph.outputs if call.name in index.ancestors([t.op.name])]
        end = ends[0] if ends else call.name
        also = () if ends else (call.name,)
    return TracePoints(get_next=found.get_next, iteration_end=end, iteration_end_also=also, is_training=True,
                       reasons=(reason, *(r for r in found.reasons if r.startswith("get_next"))))


def calls_functions(kinds: frozenset[str]) -> bool:
    """Whether a graph with these op types calls a function."""
    return bool(kinds & functions.FUNCTION_CALL_TYPES)


def reads_only(kinds: frozenset[str]) -> bool:
    """Whether a graph with these op types reads a batch and calls nothing (updates are checked apart)."""
    return bool(kinds & optypes.ITERATOR_INPUT_TYPES) and not calls_functions(kinds)


def read_points(graph: tf.Graph, index: GraphIndex, function: str) -> TracePoints | None:
    """A reading branch's points: its reads, and as iteration end the first output that waits on them."""
    reads = tuple(op.name for op in graph.get_operations() if op.type in optypes.ITERATOR_INPUT_TYPES)
    ends = [t.op.name for t in graph.outputs if set(reads) & set(index.ancestors([t.op.name]))]
    if not ends:
        return None
    return TracePoints(get_next=reads, iteration_end=ends[0], is_training=True,
                       reasons=(READ_BRANCH_REASON.format(function=function),))


def may_feed_a_step(kinds: frozenset[str]) -> bool:
    """Whether a graph with these op types both reads a batch and calls a function."""
    return calls_functions(kinds) and bool(kinds & optypes.ITERATOR_INPUT_TYPES)


def fed_step_call(graph: tf.Graph, index: GraphIndex, tables: Iterable[str]) -> tuple[tf.Operation, str] | None:
    """The op of this graph that runs the one probed function (by its ring's `tables`) it calls,
    directly or inside a loop or branch it runs (Keras 3's ``steps_per_execution`` loop), and that
    function's tables; None unless exactly one such op."""
    wanted = set(tables)
    library = {f.signature.name: f for f in index.graph_def.library.function}
    found = []
    for op in graph.get_operations():
        if op.type in functions.FUNCTION_CALL_TYPES:
            found += [(op, t) for t in _tables_called(functions.called_functions(op.node_def), library, wanted)]
    return found[0] if len(found) == 1 else None


def _tables_called(names: Iterable[str], library: dict, wanted: set[str], depth: int = 0) -> set[str]:
    """The wanted tables the library functions `names` hold, or the functions they call (a few levels)."""
    found: set[str] = set()
    for name in names:
        for node in getattr(library.get(name), "node_def", ()):
            tables = _tables_of(node)
            if tables in wanted:
                found.add(tables)
            elif depth < MAX_CALL_DEPTH and node.op in functions.FUNCTION_CALL_TYPES:
                found |= _tables_called(functions.called_functions(node), library, wanted, depth + 1)
    return found


def _tables_of(node: object) -> str | None:
    shared = node.attr.get("shared_name")  # type: ignore[attr-defined]
    if shared is None or not shared.s.startswith(TABLES_PREFIX.encode()):
        return None
    return shared.s.decode().split("_rows", 1)[0].split("_counter", 1)[0]
