"""Retraces named: a call of a training step that traced a new concrete function, written to other_runs.jsonl.

A `tf.function` step traces again when it is called with a new input signature
(a loop's partial last batch, a new dtype): the call then spends its tracing,
and the new function's first-run set-up, before the step runs, and that time
lands in the iteration's Data Aug Bound as if it were host time. The transform
sees every trace (`transform.StepTransform`), and the call hook (`host_reads`)
keeps, in a local of its frame, when the eager call in progress started: one
clock read a call, no other work on the calls' path. A trace made during a
later call than the step's previous trace is a retrace (the first call traces
twice when it creates variables: that is one call, not a retrace). It is
written at once as one line of kind "retrace" (`raw_format.other_runs`), from
the call's start to the end of the trace, with the function, its model and the
new input signature; the reports take the iteration it ran as warm-up and give
the call's time before the step's FP Start as the retrace's cost
(`reports.step.retraces`).
"""
from __future__ import annotations

import sys
import time
import warnings
from typing import Any

from npu_tf_profiling.raw_format.other_runs import K_MODEL_ID, K_SIGNATURE, RETRACE

MAX_SIGNATURE_CHARS = 300  # a long nested signature is cut: the shapes that changed are usually first
HOOK_FRAME = "claiming_call"  # host_reads' call hook
STARTED = "started"  # its local: when the eager call started (time.time())

_last_traced: dict[str, tuple[int, float] | None] = {}  # function key -> the call that traced it last (None: no call)
_failed: set[str] = set()


def traced(model: Any, graph: Any) -> None:
    """From the transform, when it probes a trace of `model`'s function (a `reader.FunctionModel`); never raises
    (a failure here must not leave the step unprobed)."""
    try:
        call = _current_call()
        before = _last_traced.get(model.key, ...)
        _last_traced[model.key] = call
        if before is ... or call is None or call == before:
            return  # the first trace, a trace outside any eager call, or the first call's second trace
        _record(model, input_signature(graph), call[1], time.time())
    except Exception as exc:  # noqa: BLE001 - profiling must never hurt the job
        _warn_once(model, exc)


def _current_call() -> tuple[int, float] | None:
    """The innermost eager call in progress on this thread's stack: (its hook frame's id, its start), or None."""
    frame = sys._getframe(2)
    while frame is not None:
        if frame.f_code.co_name == HOOK_FRAME:
            started = frame.f_locals.get(STARTED)
            if isinstance(started, float):
                return id(frame), started
        frame = frame.f_back
    return None


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
        _warn_once(model, exc)


def _warn_once(model: Any, exc: BaseException) -> None:
    if type(exc).__name__ not in _failed:
        _failed.add(type(exc).__name__)
        warnings.warn(f"npu_tf_profiling: could not record a retrace of {getattr(model, 'name', '?')} ({exc!r}); "
                      "training continues", RuntimeWarning, stacklevel=3)
