"""Retraces named: a call of a training step that traced a new concrete function, written to other_runs.jsonl.

A `tf.function` step traces again when it is called with a new input signature
(a loop's partial last batch, a new dtype): the call then spends its tracing,
and the new function's first-run set-up, before the step runs, and that time
lands in the iteration's Data Aug Bound as if it were host time. The transform
sees every trace (`transform.StepTransform`); the call hook (`host_reads`) says
which eager call is running in this thread. A trace made during a later call
than the step's previous trace is a retrace (the first call traces twice when
it creates variables: that is one call, not a retrace). The call that traced is
written as one line of kind "retrace" (`raw_format.other_runs`), spanning the
call, with the function, its model, and the new input signature; the reports
take the iteration it ran as warm-up (`reports.step.retraces`).
"""
from __future__ import annotations

import itertools
import threading
import time
import warnings
from dataclasses import dataclass, field
from typing import Any

from npu_tf_profiling.raw_format.other_runs import K_MODEL_ID, K_SIGNATURE, RETRACE

MAX_SIGNATURE_CHARS = 300  # a long nested signature is cut: the shapes that changed are usually first

_local = threading.local()
_numbers = itertools.count(1)
_last_traced: dict[str, int | None] = {}  # function key -> the call that traced it last (None: outside a call)
_failed: set[str] = set()


@dataclass
class _Call:
    """One eager `tf.function` call in progress in this thread, and the retraces its tracing made."""

    number: int
    start_s: float
    retraces: list[tuple[Any, str]] = field(default_factory=list)  # (FunctionModel, signature)


def call_started() -> _Call | None:
    """From the call hook, as an eager call starts; the previous call of this thread (None at the outermost)."""
    outer = getattr(_local, "call", None)
    _local.call = _Call(next(_numbers), time.time())
    return outer


def call_finished(outer: _Call | None) -> None:
    """From the call hook, as the call ends (also when it raised): its retraces are written."""
    call = getattr(_local, "call", None)
    _local.call = outer
    if call is None or not call.retraces:
        return
    end_s = time.time()
    for model, signature in call.retraces:
        _record(model, signature, call.start_s, end_s)


def traced(model: Any, graph: Any) -> None:
    """From the transform, when it probes a trace of `model`'s function (a `reader.FunctionModel`)."""
    call = getattr(_local, "call", None)
    number = call.number if call is not None else None
    before = _last_traced.get(model.key, ...)
    _last_traced[model.key] = number
    if before is ... or number is None or number == before:
        return  # the first trace, a trace outside any call, or the first call's second trace
    call.retraces.append((model, input_signature(graph)))


def input_signature(graph: Any) -> str:
    """The traced graph's inputs as `name: dtype[shape]`, from its structured input signature."""
    import tensorflow as tf

    signature = getattr(graph, "structured_input_signature", None)
    if signature is None:
        return "unknown"
    parts = []
    for at, spec in enumerate(tf.nest.flatten(signature)):
        if isinstance(spec, tf.TensorSpec):
            dims = ",".join("None" if d is None else str(d) for d in (spec.shape.as_list() if spec.shape.rank is not None else []))
            shape = f"[{dims}]" if spec.shape.rank is not None else "[?]"
            parts.append(f"{spec.name or f'arg{at}'}: {spec.dtype.name}{shape}")
        else:
            parts.append(f"arg{at}: {type(spec).__name__}")
    text = ", ".join(parts)
    return text if len(text) <= MAX_SIGNATURE_CHARS else text[: MAX_SIGNATURE_CHARS - 3] + "..."


def _record(model: Any, signature: str, start_s: float, end_s: float) -> None:
    """One retrace line in the run of the collection in force (nothing when none records the step trace)."""
    try:
        collection = model.source.poll()
        if collection is None or not collection.active or not collection.training_trace:
            return
        model_id = model.entry_in(collection).model_id
        collection.run.record_other_run(start_s * 1e6, end_s * 1e6, RETRACE, model.name,
                                        {K_MODEL_ID: model_id, K_SIGNATURE: signature})
    except Exception as exc:  # noqa: BLE001 - profiling must never hurt the job
        if type(exc).__name__ not in _failed:
            _failed.add(type(exc).__name__)
            warnings.warn(f"npu_tf_profiling: could not record a retrace of {model.name} ({exc!r}); training continues",
                          RuntimeWarning, stacklevel=2)
