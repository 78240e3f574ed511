"""Profiling attached to one `tf.compat.v1.Session`: which runs are iterations, and tracing them.

A run is an iteration when its fetches (transitively) execute the traced train
op. Such runs get one extra fetch, the probe vector; every other run (init,
loss-only, summaries, evaluation) goes to TensorFlow untouched. The decision is
cached per (fetches, feeds) shape, so the steady-state cost per step is a dict
lookup, one extra fetch, and one appended line.

Trace points are discovered lazily, at the first run after the graph has a
training step, because scripts often create the session before building the
model. Any failure inside profiling turns it off for this session with one
warning; errors raised by the user's own run propagate unchanged.
"""
from __future__ import annotations

import hashlib
import sys
import warnings
import weakref
from typing import Any, Hashable

import tensorflow as tf

from npu_tf_profiling.config import Resolution
from npu_tf_profiling.graph_points import GraphIndex, TracePoints, TracePointsError, find_trace_points
from npu_tf_profiling.runtime.probes import GraphProbes, build_probes
from npu_tf_profiling.runtime.profiling_run import ModelEntry, ProfilingRun, profiling_run_for

# Give up looking for a training step after this many graph versions (inference-only scripts).
MAX_DISCOVERY_ATTEMPTS = 8


class _GraphState:
    """Probes and model identity for one graph, shared by every profiled session on it."""

    def __init__(self, probes: GraphProbes, index: GraphIndex, index_version: int, model: ModelEntry) -> None:
        self.probes = probes
        self.index = index
        self.index_version = index_version
        self.model = model


_GRAPH_STATES: "weakref.WeakKeyDictionary[tf.Graph, _GraphState]" = weakref.WeakKeyDictionary()


def _fetch_key(fetches: Any) -> Hashable:
    """A hashable key for the shape of `fetches` (tensors and ops are hashable by identity)."""
    if isinstance(fetches, (list, tuple)):
        return (type(fetches), tuple(_fetch_key(f) for f in fetches))
    if isinstance(fetches, dict):
        return (dict, tuple((k, _fetch_key(v)) for k, v in fetches.items()))
    hash(fetches)
    return fetches


class SessionProfiler:
    def __init__(self, session: Any, resolution: Resolution) -> None:
        self._session = session
        self._graph: tf.Graph = session.graph
        self._resolution = resolution
        self._run: ProfilingRun = profiling_run_for(resolution)
        self._original_run = session.run
        self._original_close = session.close
        self._plans: dict[Hashable, bool] = {}
        self._state: _GraphState | None = None
        self._checked_version = -1
        self._attempts = 0
        self._runs_seen = 0  # TensorFlow ignores edits to ops once the session has loaded them
        self._enabled = resolution.options.is_on("training_trace")
        if not self._enabled:
            self._run.add_note("training_trace is off: no iteration trace is recorded")
        session.run = self.run
        session.close = self.close

    # ----- the wrapped Session API --------------------------------------------------------
    def run(self, fetches: Any, feed_dict: Any = None, options: Any = None, run_metadata: Any = None) -> Any:
        traced = False
        self._runs_seen += 1
        if self._enabled and self._run.collecting:
            try:
                traced = self._is_iteration(fetches, feed_dict)
            except TracePointsError:
                raise  # a wrong fp_point/bp_point is the user's bad input: fail before training
            except Exception as exc:  # noqa: BLE001 - profiling must never hurt the job
                self._disable(exc)
        if not traced:
            return self._original_run(fetches, feed_dict, options, run_metadata)
        state = self._state
        assert state is not None
        results, vector = self._original_run([fetches, state.probes.fetch], feed_dict, options, run_metadata)
        try:
            self._run.record(state.model, state.probes.layout.decode(vector))
        except Exception as exc:  # noqa: BLE001
            self._disable(exc)
        return results

    def close(self) -> None:
        self._original_close()
        if not sys.is_finalizing():  # a session collected at shutdown: the atexit handler reports
            self._run.write_reports()

    # ----- deciding what is an iteration ----------------------------------------------------
    def _is_iteration(self, fetches: Any, feed_dict: Any) -> bool:
        try:
            key: Hashable | None = (_fetch_key(fetches), frozenset(feed_dict) if feed_dict else None)
        except TypeError:
            key = None  # unhashable fetch structure: decide every time
        if key is not None:
            plan = self._plans.get(key)
            if plan is not None:
                return plan
        if self._state is None and not self._discover():
            return False
        plan = self._plan(fetches, feed_dict)
        if key is not None:
            self._plans[key] = plan
        return plan

    def _plan(self, fetches: Any, feed_dict: Any) -> bool:
        state = self._state
        assert state is not None
        names = [_op_name(self._graph, e) for e in _fetch_leaves(fetches)]
        names = [n for n in names if n is not None]
        if any(n not in state.index for n in names) and self._graph.version != state.index_version:
            state.index = GraphIndex.from_graph(self._graph)
            state.index_version = self._graph.version
        known = [n for n in names if n in state.index]
        if state.probes.iteration_end not in state.index.ancestors(known):
            return False
        fed_ops = {_op_name(self._graph, k) for k in (feed_dict or {})}
        clash = sorted(fed_ops & state.probes.waited_ops)
        if clash:
            self._run.add_note(
                f"runs feeding {', '.join(clash)} are not traced: the probes wait on those ops, and a fed op does not run"
            )
            return False
        return True

    def _discover(self) -> bool:
        """Find trace points and build probes once the graph has a training step."""
        version = self._graph.version
        if version == self._checked_version or self._attempts >= MAX_DISCOVERY_ATTEMPTS:
            return False
        self._checked_version = version
        self._attempts += 1
        shared = _GRAPH_STATES.get(self._graph)
        if shared is not None:
            self._state = shared
            return True
        options = self._resolution.options
        points = find_trace_points(self._graph, options.fp_point or "", options.bp_point or "")
        if not points.is_training or points.iteration_end is None:
            if self._attempts >= MAX_DISCOVERY_ATTEMPTS:
                self._run.add_note(f"no training step found in graph {id(self._graph):#x}; its runs are not traced")
            return False
        fingerprint = _fingerprint(self._graph, points)
        index = GraphIndex.from_graph(self._graph)
        probes = build_probes(self._graph, points, index, user_bp=bool(options.bp_point), may_rewire=self._runs_seen <= 1)
        if probes.not_rewired:
            self._run.add_note(
                "probes wait on, but could not be wired into, " + ", ".join(sorted(set(probes.not_rewired))[:5])
                + ": their times may be late by the executor's scheduling (control-flow context, or the session ran before the model was complete)"
            )
        for reason in points.reasons:
            if reason.startswith("warning:"):
                self._run.add_note(reason)
        model = self._run.register_model(fingerprint, points.to_dict())
        self._state = _GraphState(probes, index, self._graph.version, model)
        _GRAPH_STATES[self._graph] = self._state
        return True

    def _disable(self, exc: BaseException) -> None:
        self._enabled = False
        warnings.warn(
            f"npu_tf_profiling: profiling turned off for this session after an internal error ({exc!r}); training continues",
            RuntimeWarning,
            stacklevel=3,
        )


def _fetch_leaves(fetches: Any) -> list[Any]:
    """The leaves of a fetch structure, in any order.

    Not `tf.nest.flatten`: it sorts dict keys, and MonitoredSession fetches a dict
    keyed by hook objects, which do not sort.
    """
    leaves: list[Any] = []
    stack = [fetches]
    while stack:
        item = stack.pop()
        if isinstance(item, (list, tuple)):
            stack.extend(item)
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif item is not None:
            leaves.append(item)
    return leaves


def _op_name(graph: tf.Graph, element: Any) -> str | None:
    if isinstance(element, str):
        try:
            element = graph.as_graph_element(element, allow_tensor=True, allow_operation=True)
        except (KeyError, ValueError, TypeError):
            return None
    if isinstance(element, tf.Operation):
        return element.name
    op = getattr(element, "op", None)
    return op.name if isinstance(op, tf.Operation) else None


def _fingerprint(graph: tf.Graph, points: TracePoints) -> str:
    """Same training graph rebuilt (e.g. repeated Estimator.train calls) -> same Model ID."""
    text = "|".join([str(points.iteration_end), str(points.fp), str(points.bp), ",".join(points.get_next)])
    text += f"|{len(graph.get_operations())}"
    return hashlib.sha1(text.encode("utf-8")).hexdigest()
