"""Timing the runs that are not training steps, so the reports can say what filled the time between steps.

A Session's run that does not execute the train op (an evaluation, a summary
or checkpoint run), and an eager call of a `tf.function` that is not a probed
step (Keras' validation pass, a custom evaluation step), are timed on the host
(two clock reads around the call) and written to ``other_runs.jsonl`` while a
collection with training_trace is in force (`raw_format.other_runs`). Training
iterations pay nothing here: their plans never reach this module. The kind is
read once per fetch shape (a Session run) or per call's function name.
"""
from __future__ import annotations

import time
import warnings
from typing import Any, Callable

from npu_tf_profiling.graph_points.optypes import ITERATOR_INPUT_TYPES
from npu_tf_profiling.raw_format import other_runs as kinds
from npu_tf_profiling.raw_format.call_sites import OTHER_RUN
from npu_tf_profiling.runtime import call_sites
from npu_tf_profiling.runtime.fetches import fetch_leaves, op_name

# Op types a Session run fetches to write summaries, or to save a checkpoint.
SUMMARY_TYPES = frozenset({"MergeSummary", "ScalarSummary", "HistogramSummary", "ImageSummary", "AudioSummary",
                           "AudioSummaryV2", "TensorSummary", "TensorSummaryV2", "WriteSummary", "WriteScalarSummary",
                           "WriteHistogramSummary", "WriteImageSummary", "WriteAudioSummary", "WriteRawProtoSummary",
                           "FlushSummaryWriter"})
CHECKPOINT_TYPES = frozenset({"SaveV2", "Save", "SaveSlices", "MergeV2Checkpoints"})
# What initializers run: a fetched group (NoOp) of these, or one of them (global_variables_initializer, iterator.initializer).
INIT_TYPES = frozenset({"Assign", "AssignVariableOp", "MakeIterator", "InitializeTableV2", "InitializeTableFromTextFileV2",
                        "NoOp"})
# A fetched op of these types only reads a variable (MonitoredSession hooks read the global step each step).
READ_TYPES = frozenset({"VariableV2", "Variable", "VarHandleOp", "ReadVariableOp", "Identity", "Const", "Add", "AddV2",
                        "Sub", "Mul", "Cast", "FloorMod", "FloorDiv", "Equal", "Greater", "GreaterEqual", "Less",
                        "VarIsInitializedOp", "IsVariableInitialized", "Switch", "RefSwitch", "Merge", "RefMerge"})  # a read guarded by a cond
READS_AT_MOST = 16
# Keras' own tf.function names: fit's validation pass, and predict.
FUNCTION_KINDS = {"test_function": kinds.VALIDATION, "predict_function": kinds.PREDICTION}
_failed: set[str] = set()


def session_run_kind(graph: Any, fetches: Any) -> str:
    """What a non-training Session run is, from the types of the ops it runs (those it fetches and their inputs)."""
    ops = [graph.get_operation_by_name(name) for name in
           (op_name(graph, leaf) for leaf in fetch_leaves(fetches)) if name is not None]
    near = {op.type for op in ops} | {i.op.type for op in ops for i in op.inputs} | {c.type for op in ops for c in op.control_inputs}
    if near & CHECKPOINT_TYPES:
        return kinds.CHECKPOINT
    if {op.type for op in ops} & ITERATOR_INPUT_TYPES or {i.op.type for op in ops for i in op.inputs} & ITERATOR_INPUT_TYPES:
        return kinds.INPUT_READS  # the batch fetched to be fed to the step: input, not evaluation
    if near & SUMMARY_TYPES:
        return kinds.SUMMARIES
    if ops and all(op.type in INIT_TYPES and all(c.type in INIT_TYPES for c in op.control_inputs) for op in ops):
        return kinds.INITIALIZATION
    if ops and _only_reads(ops):
        return kinds.VARIABLE_READS
    return kinds.EVALUATION


def _only_reads(ops: list[Any]) -> bool:
    """Whether these ops and everything they depend on are a few variable reads and scalar arithmetic
    (a hook reading `global_step + 1`), looking at most READS_AT_MOST ops."""
    seen, stack = set(), list(ops)
    while stack:
        op = stack.pop()
        if op.name in seen:
            continue
        seen.add(op.name)
        if op.type not in READ_TYPES or len(seen) > READS_AT_MOST:
            return False
        stack.extend(i.op for i in op.inputs)
        stack.extend(op.control_inputs)
    return True


def function_kind(function: Any) -> tuple[str, str | None]:
    """(kind, name) of a `tf.function` call that is not a training step."""
    name = getattr(function, "name", None) or getattr(getattr(function, "_python_function", None), "__name__", None)
    return FUNCTION_KINDS.get(name, kinds.FUNCTION_CALLS), name


def timed(collection: Any, kind: str, name: str | None, call: Callable[[], Any]) -> Any:
    """Run `call`; its span is written to `collection`'s other_runs.jsonl (also when it raises),
    and its caller's line noted for `advise` (a few per kind: ``call_sites``)."""
    call_sites.note_caller(OTHER_RUN, {"kind": kind, "name": name})
    start = time.time()
    try:
        return call()
    finally:
        end = time.time()
        try:
            collection.run.record_other_run(start * 1e6, end * 1e6, kind, name)
        except Exception as exc:  # noqa: BLE001 - profiling must never hurt the job
            _warn_once(exc)


def recording(collection: Any) -> bool:
    """Whether `collection` (a source's poll) records the step trace now."""
    return collection is not None and collection.active and collection.training_trace


def _warn_once(exc: BaseException) -> None:
    key = type(exc).__name__
    if key not in _failed:
        _failed.add(key)
        warnings.warn(f"npu_tf_profiling: could not record a run between iterations ({exc!r}); training continues",
                      RuntimeWarning, stacklevel=3)


def function_call(function: Any, call: Callable[[], Any], current_source: Callable[[], Any]) -> Any:
    """An eager call of `function`, a `tf.function` that is not a probed step: timed while the
    TensorFlow 2 source (`current_source()`, the request in force) records the step trace."""
    try:
        source = current_source()
        collection = source.poll() if source is not None else None
        kind, name = function_kind(function) if recording(collection) else (None, None)
    except Exception:  # noqa: BLE001 - profiling must never hurt the job: the call goes untimed
        kind, name = None, None
    if kind is None:
        return call()
    return timed(collection, kind, name, call)
