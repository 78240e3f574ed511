"""The graph transform: probes into every traced training step, before it becomes a function.

TensorFlow calls `StepTransform` with each graph it traces: a `tf.function`'s
(after automatic control dependencies, before its inputs are fixed), and each
body `while_v2`/`cond_v2` makes. Which graphs get probes:

* only while a request is in force (`attach`), and only in eager TensorFlow 2:
  in a graph-mode program (`disable_eager_execution`) the Session path times the
  step, and a function it calls must not be timed twice;
* only graphs that update variables themselves (an optimizer's kernels): an outer
  function that calls the step (a Keras `steps_per_execution` loop, a custom
  loop calling a `tf.function` step) has none, so each optimizer step gives one
  row, from the graph that really is the step;
* never a `cond_v2` branch (a loss-scale optimizer's "apply if finite"): the
  graph around it is the step, and discovery sees the updates through the call;
  except a branch that only reads a batch (Keras 3's ``steps_per_execution``
  loop reads each next batch in one), probed as a reader whose reads feed the
  step its function calls (`callers`);
* never an XLA-compiled function (`jit_compile=True`): no stamp op has an XLA
  kernel, and one would fail the compilation. The function that calls it (Keras'
  `train_function` around its compiled step, or a custom loop's caller) is probed
  instead when its only updates are such calls: its rows hold GetNext and the
  iteration's end, and FP/BP are N/A (`JIT_NOTE` says why; `callers`);
* a caller that reads the batch for a probed step without a read of its own
  (Keras 3's fit) gets probes too, whose rows give that step its GetNext
  (`callers`).

A graph is analysed with the Session path's discovery and user points, and gets
the same probes (`probes.build_probes`) with a ring named for its Python
function (`reader.FunctionModel`). A step whose graph reads no batch (it is an
argument) has its calls watched, to take the eager reads before each call as
its GetNext (`host_reads`). Control inputs only are added, so what the
function computes is unchanged. Any failure while probing puts back every
control input it changed and leaves that graph unprobed, with one warning: the
ops already added then wait on nothing the function runs, and TensorFlow prunes
them from the function.
"""
from __future__ import annotations

import threading
import uuid
import warnings
from typing import Callable

import tensorflow as tf

from npu_tf_profiling.graph_points import Discovery, TracePoints, analyse, optypes
from npu_tf_profiling.runtime.collection import CollectionSource
from npu_tf_profiling.runtime.functions import callers, retraces
from npu_tf_profiling.runtime.functions.call_ends import watch_calls
from npu_tf_profiling.runtime.functions.fed_batches import FedBatches
from npu_tf_profiling.runtime.functions.host_reads import watch
from npu_tf_profiling.runtime.functions.profiler_capture import CAPTURE
from npu_tf_profiling.runtime.functions.reader import FunctionModel
from npu_tf_profiling.runtime.functions.tracing import BRANCH, FUNCTION, WHILE_BODY, TracingContext, traced_in_loop_body, tracing_context
from npu_tf_profiling.runtime import tf_private
from npu_tf_profiling.runtime.chosen_points import choose_points, fallback_note
from npu_tf_profiling.runtime.probes import GraphProbes, build_probes, process_clock
from npu_tf_profiling.runtime.ring_reader import read_in_the_background

JIT_NOTE = (
    "{name} is compiled with XLA (jit_compile=True): no stamp op has an XLA kernel, so nothing is stamped inside it. "
    "Where a traced function calls it (Keras fit's train_function does), that caller's rows time each step: "
    "Iteration Time and GetNext, with FP/BP N/A; compile with jit_compile=False for FP/BP"
)


SourceGetter = Callable[[], "CollectionSource | None"]
_BRANCHING = frozenset({"If", "StatelessIf", "Case", "StatelessCase"})


class StepTransform:
    """The callable in TensorFlow's FUNC_GRAPH_TRANSFORMS list (see the module docstring)."""

    def __init__(self, current_source: SourceGetter) -> None:
        self._current_source = current_source
        self._models: dict[str, FunctionModel] = {}
        self._lock = threading.Lock()
        self._failed_once = False

    def __call__(self, graph: tf.Graph) -> None:
        kinds = frozenset(op.type for op in graph.get_operations())  # the one scan every traced graph pays
        updates = _updates_variables(kinds)
        reads_only = not updates and callers.reads_only(kinds)
        if (not updates and not reads_only and not callers.may_feed_a_step(kinds)
                and not (callers.calls_functions(kinds) and callers.compiled_calls(graph))):
            return  # the common case (data pipelines, inference, small helpers)
        if not tf.compat.v1.executing_eagerly_outside_functions():
            return  # a graph-mode program: its Session times the step
        source = self._current_source()  # a bad request raises here, before the step first runs
        if source is None:
            return
        context = tracing_context(graph.name)
        if context.kind == BRANCH and not reads_only:
            return
        if context.jit:
            if analyse(graph).is_training:  # evaluation and prediction steps are not iterations anyway
                source.note(JIT_NOTE.format(name=context.function_name))
            return
        saved = {op: list(op.control_inputs) for op in graph.get_operations()}
        try:
            self._probe(graph, context, source, kinds, updates)
        except Exception as exc:  # noqa: BLE001 - profiling must never hurt the job
            _restore_control_inputs(saved)
            if not self._failed_once:
                self._failed_once = True
                warnings.warn(
                    f"npu_tf_profiling: could not trace the training function {context.function_name} ({exc!r}); "
                    "it runs unprofiled, training continues",
                    RuntimeWarning,
                    stacklevel=2,
                )

    def _probe(self, graph: tf.Graph, context: TracingContext, source: CollectionSource, kinds: frozenset[str],
               updates: bool) -> None:
        discovery = analyse(graph)
        if context.kind == BRANCH:
            self._probe_read_branch(graph, discovery, context, source)
            return
        compiled_step = None if updates else callers.compiled_step_call(graph, discovery.index.graph_def.library)
        fed = self._fed_step(graph, discovery, context, kinds) if compiled_step is None else None
        if compiled_step is not None or fed is not None:  # a caller: its rows time the call, no points inside it
            chosen = choose_points(discovery, {})
            call, reason = (compiled_step, callers.JIT_CALLER_REASON) if fed is None else (
                fed[0], callers.FEEDER_REASON.format(step=fed[1].name))
            points = callers.around_call(graph, discovery.index, chosen.points, call, reason)
        elif not discovery.is_training or _steps_are_called(discovery):
            return
        else:
            chosen = choose_points(discovery, source.asked_points())
            points = chosen.points
        if points is None or points.iteration_end is None:
            return
        model = self._model_for(context.function_key, context.function_name, points.to_dict(), chosen.fallbacks, source)
        retraces.traced(model, graph)  # a later call's trace is named (retraces)
        probes = self._add_probes(graph, points, discovery, model, source, user_bp=chosen.user_bp, in_loop=traced_in_loop_body(graph),
                                  loop_body=context.kind == WHILE_BODY)
        if context.kind == FUNCTION:  # the Python-called function: its calls are the iterations (task_trace)
            CAPTURE.watch(context.caller, fed[1] if fed is not None else model)
            if model.call_ends is None:  # a step whose row is never written is found by its calls (call_ends)
                model.call_ends = watch_calls(context.called, calls_before=0 if context.call_hooked else 1)
                if model.call_ends is not None:
                    model.call_ends.models.append(model)
        if fed is not None:
            fed[1].fed_by(model)
            with self._lock:
                branch_reads = self._models.get(_reads_key(context.function_key))
            if branch_reads is not None and branch_reads.source is source:
                fed[1].fed_by(branch_reads)
        elif probes.shape.get_next_pairs == 0 and context.kind == FUNCTION and model.host_batches is None:
            model.host_batches = watch(context.caller, self._current_source)  # its batches are read before its calls

    def _probe_read_branch(self, graph: tf.Graph, discovery: Discovery, context: TracingContext, source: CollectionSource) -> None:
        """A branch that only reads: probed as a reader, whose rows are never iterations. They feed the step
        its function calls, once that function's own trace (the last, around its loop) links them."""
        points = callers.read_points(graph, discovery.index, context.function_name)
        if points is None:
            return
        model = self._model_for(_reads_key(context.function_key), context.function_name, points.to_dict(), {}, source)
        if model.feeds is None:
            model.reads_in_loop = True
            model.feeds = FedBatches(reason="")  # until linked, its reads go nowhere (bounded queues)
        self._add_probes(graph, points, discovery, model, source, user_bp=False, in_loop=traced_in_loop_body(graph))

    def _add_probes(self, graph: tf.Graph, points: TracePoints, discovery: Discovery, model: FunctionModel,
                    source: CollectionSource, user_bp: bool, in_loop: bool, loop_body: bool = False) -> GraphProbes:
        clock, clock_note = process_clock()
        probes = build_probes(graph, points, discovery.index, user_bp=user_bp, may_rewire=True, clock=clock,
                              tables=model.tables, count_lock=in_loop, in_a_loop=in_loop or loop_body)
        if not probes.gated:  # the iteration end could not wait on the row's write: the function runs it itself
            graph.control_outputs.append(probes.ring.write)
        model.add_trace(probes.shape, probes.ring.row_width)
        for note in (clock_note, *points.warnings, *probes.notes):
            if note:
                source.note(note)
        return probes

    def _fed_step(self, graph: tf.Graph, discovery: Discovery, context: TracingContext,
                  kinds: frozenset[str]) -> tuple[tf.Operation, FunctionModel] | None:
        """The call, in this graph, of the one probed step with no read of its own that it feeds, if any."""
        if context.kind not in (FUNCTION, WHILE_BODY) or not callers.may_feed_a_step(kinds) or not discovery.points().get_next:
            return None
        with self._lock:
            readless = {m.tables: m for m in self._models.values()
                        if m.traces and all(t.shape.get_next_pairs == 0 for t in m.traces)}
        found = callers.fed_step_call(graph, discovery.index, readless) if readless else None
        return (found[0], readless[found[1]]) if found else None

    def _model_for(self, key: str, name: str, trace_points: dict, fallbacks: dict, source: CollectionSource) -> FunctionModel:
        with self._lock:
            model = self._models.get(key)
            if model is None or model.source is not source:
                model = FunctionModel(
                    key=key, name=name, tables=f"npu_tf_profiling_{uuid.uuid4().hex}",
                    trace_points=trace_points, fallbacks=dict(fallbacks), source=source,
                )
                self._models[key] = model
                for option, record in fallbacks.items():
                    source.note(fallback_note(option, record))
                read_in_the_background(model)
            return model


def _reads_key(function_key: str) -> str:
    """The model key of the reading branches traced inside `function_key`'s function."""
    return f"{function_key}/branch reads"


def _steps_are_called(discovery: Discovery) -> bool:
    """Whether every update is inside a called function that is a step of its own (a loop's body, a
    `tf.function` called here): that graph is probed. Updates inside a branch (`If`/`Case`) are this graph's."""
    updates = discovery.updates
    if not set(updates.ops) <= updates.via_calls:
        return False
    return not any(discovery.index.types[op] in _BRANCHING for op in updates.ops)


def _updates_variables(kinds: frozenset[str]) -> bool:
    """Whether a graph with these op types has an optimizer kernel or an assignment (the cheap first test)."""
    return any(kind in optypes.ASSIGN_TYPES or optypes.is_apply_type(kind) for kind in kinds)


def _restore_control_inputs(saved: dict[tf.Operation, list[tf.Operation]]) -> None:
    for op, inputs in saved.items():
        if list(op.control_inputs) != inputs:
            tf_private.replace_control_inputs(op, inputs)

