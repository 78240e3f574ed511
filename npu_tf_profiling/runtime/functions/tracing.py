"""What TensorFlow is tracing when it hands a graph to the transform: which function, whether XLA-compiled, which kind of body.

The transform receives the graph alone. The rest is in TensorFlow's own frames
on the stack: ``tracing_compilation._create_concrete_function`` holds the
``tracing_options`` (the Python function and its attributes, ``_XlaMustCompile``
for ``jit_compile=True``), ``Function.__call__`` the `tf.function` object, and ``control_flow_util_v2.create_new_tf_function``
is called by ``while_v2`` for a loop's body and by ``cond_v2`` for a branch.
These are private and identical in TensorFlow 2.15 and 2.21; a frame that is not
found gives the safe answer (an unknown function is keyed by its graph's name; an
unknown kind of body is treated as a function of its own).
"""
from __future__ import annotations

import os
import sys
from dataclasses import dataclass
from typing import Any

from npu_tf_profiling.runtime.tf_private import BODY_FRAME, TRACE_FRAME, XLA_ATTRIBUTE, body_maker

_TRACE_FRAME = TRACE_FRAME[1]
_BODY_FRAME = BODY_FRAME[1]
_CALL_FRAME = "__call__"  # Function.__call__, the call that traces
_HOOK_FRAME = "claiming_call"  # the package's call hook around it (host_reads)
_HOOK_DEPTH = 6  # frames from `Function.__call__` out to the hook (`_hooked`)
_LOOP_BODY_NAME = "while_body"

FUNCTION = "function"  # a tf.function's own graph
WHILE_BODY = "while body"
BRANCH = "cond branch"
OTHER = "other body"


@dataclass(frozen=True)
class TracingContext:
    """The traced graph's place: `function_key` names the Python function whose trace it is part of
    (every trace of one function is one model), `kind` what the graph is, `jit` whether any
    enclosing function is XLA-compiled (no stamp op has an XLA kernel)."""

    function_key: str
    function_name: str
    kind: str
    jit: bool
    # The `tf.function` object being called (the innermost on the stack), whose calls
    # `host_reads` can watch; None when not found.
    caller: Any = None
    # The outermost `tf.function` on the stack: the one the script called (Keras 3's fit calls
    # `multi_step_on_iterator`, which calls the step in its graph), and whether that call passes
    # through the package's call hook (`host_reads`): not when the hook was put in place during
    # this very call (the env vars' request is read at the first trace).
    called: Any = None
    call_hooked: bool = False


def tracing_context(graph_name: str) -> TracingContext:
    """Read the stack from the transform's caller outwards (see the module docstring)."""
    kind: str | None = None
    function = None
    jit = False
    caller = called = None
    hooked = False
    frame = sys._getframe(1)
    while frame is not None:
        code = frame.f_code
        if code.co_name == _CALL_FRAME:
            found = _function_object(frame.f_locals.get("self"))
            if found is not None:
                caller = caller or found
                called, hooked = found, _hooked(frame)
        if code.co_name == _BODY_FRAME and kind is None and frame.f_back is not None:
            maker = body_maker(os.path.basename(frame.f_back.f_code.co_filename))
            kind = WHILE_BODY if maker == "while_v2" else BRANCH if maker == "cond_v2" else OTHER
        elif code.co_name == _TRACE_FRAME:
            options = frame.f_locals.get("tracing_options")
            attributes = dict(getattr(options, "attributes", None) or {})
            jit = jit or bool(attributes.get(XLA_ATTRIBUTE, False))
            if function is None:
                function = getattr(options, "python_function", None)
        frame = frame.f_back
    if function is None:
        return TracingContext(graph_name, graph_name, kind or FUNCTION, jit, caller, called, hooked)
    name = getattr(function, "__qualname__", None) or getattr(function, "__name__", None) or graph_name
    return TracingContext(f"{name}@{id(function):x}", name, kind or FUNCTION, jit, caller, called, hooked)


def _hooked(call_frame: Any) -> bool:
    """Whether the call hook is among the few frames around `Function.__call__`: TensorFlow's
    traceback filter wraps it in one more, and a call not yet known as a step's is timed as another
    run (`other_runs.function_call`, its `timed` and the call's lambda: three more). A step whose
    first call comes after another function's trace put the hook in place (a distributed dataset's
    iterator) is one: missed, its calls were counted from 2 and matched with the wrong rows."""
    frame = call_frame.f_back
    for _ in range(_HOOK_DEPTH):
        if frame is None:
            return False
        if frame.f_code.co_name == _HOOK_FRAME:
            return True
        frame = frame.f_back
    return False


def traced_in_loop_body(graph: Any) -> bool:
    """Whether `graph`, a function's, is traced inside a loop's body: TensorFlow may then run its calls
    at once (a `tf.range` loop of steps runs the next call while the last one ends).

    Such a function has the body among its `outer_graph`s; `while_v2` names its body graphs
    ``while_body_<n>`` (TensorFlow 2.15 and 2.21). A loop's body itself is not counted: its
    iterations' rows were seen in order (Keras 2's `steps_per_execution` loop).
    """
    outer = getattr(graph, "outer_graph", None)
    while outer is not None:
        if _LOOP_BODY_NAME in (getattr(outer, "name", "") or ""):
            return True
        outer = getattr(outer, "outer_graph", None)
    return False


def _function_object(candidate: Any) -> Any:
    """`candidate` if it is a `tf.function` (TensorFlow's polymorphic Function), else None."""
    kind = type(candidate)
    if kind.__name__ == "Function" and kind.__module__.endswith("polymorphic_function.polymorphic_function"):
        return candidate
    return None
