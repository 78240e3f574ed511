"""Profiling attached to one `tf.compat.v1.Session`: which runs are iterations, and tracing them.

A run is an iteration when its fetches (transitively) execute the traced train
op. Such runs get one extra fetch, the probe vector (training_trace), and, on the
iterations the collection window selects, FULL_TRACE step stats (task_trace);
every other run (init, loss-only, summaries, evaluation) goes to TensorFlow
untouched. The decision is cached per (fetches, feeds) shape, so the
steady-state cost per step is a dict lookup, one extra fetch, and one appended
line.

Trace points are discovered lazily, at the first run after the graph has a
training step, because scripts often create the session before building the
model. Any failure inside profiling turns it off for this session with one
warning; errors raised by the user's own run propagate unchanged. An fp_point or
bp_point the graph does not have is a note, and the automatic point is used
instead (see `user_points`): profiling never stops a job.

Each graph gets its own Model ID, even when two graphs are identical, so rows of
two models never mix; the one exception is a rebuilt graph that carries on an
earlier identical graph's global step (an Estimator's repeated `train()`
restoring its checkpoint), which continues that graph's Model ID.
"""
from __future__ import annotations

import hashlib
import itertools
import sys
import threading
import time
import warnings
import weakref
from dataclasses import dataclass
from typing import Any, Hashable

import tensorflow as tf

from typing import Protocol

from npu_tf_profiling.graph_points import GraphIndex, TracePoints, analyse
from npu_tf_profiling.runtime.collection import Collection, IterationCounter
from npu_tf_profiling.runtime.probes import GraphProbes, build_probes
from npu_tf_profiling.runtime.profiling_run import ModelEntry, ProfilingRun
from npu_tf_profiling.runtime.task_capture import RawRunMetadata, full_trace_options
from npu_tf_profiling.runtime.user_points import FALLBACK_KEY, ChosenPoints, choose_points, fallback_note, not_applied_note

# Give up looking for a training step after this many graph versions (inference-only scripts).
MAX_DISCOVERY_ATTEMPTS = 8


class CollectionSource(Protocol):
    """Where a session gets the Collection in force: fixed (static request) or a DynamicController."""

    def poll(self) -> Collection | None: ...

    def after_iteration(self, iteration_id: int) -> None: ...

    def asked_points(self) -> dict[str, str]:
        """{"fp_point": ..., "bp_point": ...} of the request in force ("" = automatic)."""
        ...

    def note(self, message: str) -> None:
        """Tell the user a fact about what is profiled, where this source's user looks."""
        ...


@dataclass
class StaticSource:
    collection: Collection
    fp_point: str = ""
    bp_point: str = ""

    def poll(self) -> Collection | None:
        return self.collection

    def after_iteration(self, iteration_id: int) -> None:
        pass

    def asked_points(self) -> dict[str, str]:
        return {"fp_point": self.fp_point, "bp_point": self.bp_point}

    def note(self, message: str) -> None:
        """info.json's notes, and one warning at the user's line."""
        self.collection.run.add_note(message)


@dataclass
class _GraphState:
    """What one graph's training step is, shared by every profiled session on it."""

    points: TracePoints
    probes: GraphProbes | None  # None when no collection can want the step trace
    index: GraphIndex
    index_version: int
    fingerprint: str
    counter: IterationCounter
    models: dict[int, ModelEntry]  # id(ProfilingRun) -> this graph's model there
    chosen: ChosenPoints
    op_types: dict[str, str] | None = None

    def model_in(self, run: ProfilingRun, graph: tf.Graph, task_trace: bool, source: CollectionSource) -> ModelEntry:
        """This graph's model in `run`, registered on first use; `source` (the recording session's)
        says which points were asked for, and hears when they differ from the ones wired in."""
        model = self.models.get(id(run))
        if model is None:
            if task_trace and self.op_types is None:
                self.op_types = {op.name: op.type for op in graph.get_operations()}
            entry = self.points.to_dict()
            fallbacks = self.chosen.fallbacks_for(source.asked_points())
            if fallbacks:
                entry[FALLBACK_KEY] = fallbacks
            with _MODEL_LOCK:
                model = run.register_model(self._model_key(run), entry, self.op_types if task_trace else None)
            self.models[id(run)] = model
            for option, record in fallbacks.items():
                if record != self.chosen.fallbacks.get(option):
                    source.note(not_applied_note(option, record))
        return model

    def _model_key(self, run: ProfilingRun) -> str:
        """This graph's key among `run`'s models: its own, unless it carries on an identical graph's steps."""
        shape = (id(run), self.fingerprint)
        previous = _LATEST_OF_SHAPE.get(shape)
        if previous is not None and _carries_on(previous[1], self.counter):
            key = previous[0]
        else:
            key = f"{self.fingerprint}/{next(_GRAPH_SERIALS)}"
        _LATEST_OF_SHAPE[shape] = (key, self.counter)
        return key


def _carries_on(earlier: IterationCounter, later: IterationCounter) -> bool:
    """`later` continues `earlier`'s global step (a checkpoint restored), so it is the same model."""
    return earlier.last_step is not None and later.last_step is not None and later.last_step > earlier.last_step


_GRAPH_STATES: "weakref.WeakKeyDictionary[tf.Graph, _GraphState]" = weakref.WeakKeyDictionary()
# (id(ProfilingRun), graph fingerprint) -> (model key, counter) of the graph of that shape registered last.
_LATEST_OF_SHAPE: dict[tuple[int, str], tuple[str, IterationCounter]] = {}
_GRAPH_SERIALS = itertools.count(1)
_MODEL_LOCK = threading.Lock()


def _fetch_key(fetches: Any) -> Hashable:
    """A hashable key for the shape of `fetches` (tensors and ops are hashable by identity)."""
    if isinstance(fetches, (list, tuple)):
        return (type(fetches), tuple(_fetch_key(f) for f in fetches))
    if isinstance(fetches, dict):
        return (dict, tuple((k, _fetch_key(v)) for k, v in fetches.items()))
    hash(fetches)
    return fetches


class SessionProfiler:
    """Wraps `session.run`/`close` of one session; `source` says what to collect, and with which points."""

    def __init__(self, session: Any, source: CollectionSource, *, dynamic: bool) -> None:
        self._session = session
        self._graph: tf.Graph = session.graph
        self._source = source
        # Dynamic collections may want the step trace later, and probes can only be wired in
        # before the session first runs; so a dynamic session always prepares them.
        self._dynamic = dynamic
        self._original_run = session.run
        self._original_close = session.close
        self._plans: dict[Hashable, bool] = {}
        self._state: _GraphState | None = None
        self._checked_version = -1
        self._attempts = 0
        self._runs_seen = 0  # TensorFlow ignores edits to ops once the session has loaded them
        self._enabled = True
        self._original_make_callable = session.make_callable
        self._original_make_callable_from_options = session._make_callable_from_options
        session.run = self.run
        session.close = self.close
        # `make_callable` and Keras in graph mode run steps through callables, not `run`.
        session.make_callable = self.make_callable
        session._make_callable_from_options = self._make_callable_from_options

    # ----- the wrapped Session API --------------------------------------------------------
    def run(self, fetches: Any, feed_dict: Any = None, options: Any = None, run_metadata: Any = None) -> Any:
        self._runs_seen += 1
        iteration = False
        if self._enabled:
            try:
                iteration = self._is_iteration(fetches, feed_dict)
            except Exception as exc:  # noqa: BLE001 - profiling must never hurt the job
                self._disable(exc)
        if not iteration:
            return self._original_run(fetches, feed_dict, options, run_metadata)
        return self._run_iteration(fetches, feed_dict, options, run_metadata)

    def make_callable(self, fetches: Any, feed_list: Any = None, accept_options: bool = False) -> Any:
        """`Session.make_callable`; a callable that runs the train op also fetches the probe vector.

        With a feed list TensorFlow's callable calls `run`, which is already profiled.
        """
        state = self._callable_state(fetches, {}) if feed_list is None else None
        if state is None:
            return self._original_make_callable(fetches, feed_list, accept_options)
        inner = self._original_make_callable([fetches, state.probes.fetch], None, accept_options)
        return self._probed_call(state, inner, lambda out: (out[0], out[1]))

    def _make_callable_from_options(self, callable_options: Any) -> Any:
        """The CallableOptions form Keras uses in graph mode; same idea as `make_callable`."""
        names = list(callable_options.fetch) + list(callable_options.target)
        state = self._callable_state(names, dict.fromkeys(callable_options.feed))
        if state is None:
            return self._original_make_callable_from_options(callable_options)
        options = type(callable_options)()
        options.CopyFrom(callable_options)
        options.fetch.append(state.probes.fetch.name)
        inner = self._original_make_callable_from_options(options)
        return self._probed_call(state, inner, lambda out: (out[:-1], out[-1]))

    def _callable_state(self, fetches: Any, feeds: dict) -> _GraphState | None:
        """The graph state when a callable of these fetches is a training step to probe, else None.

        Callables are fixed when made, so the probe vector is fetched on every call and the
        window decides what is recorded; task_trace (FULL_TRACE) is not applied to callables.
        """
        self._runs_seen += 1
        try:
            iteration = self._enabled and self._is_iteration(fetches, feeds)
        except Exception as exc:  # noqa: BLE001 - profiling must never hurt the job
            self._disable(exc)
            return None
        state = self._state
        return state if iteration and state is not None and state.probes is not None else None

    def _probed_call(self, state: _GraphState, inner: Any, split: Any) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            run, iteration_id = state.counter.begin()
            collection = self._source.poll()
            keep = collection is not None and collection.active and collection.wants(iteration_id)[0]
            results, vector = split(self._counted(state, run, inner, *args, **kwargs))
            try:
                self._record(state, collection, run, iteration_id, vector, keep, None, 0.0, 0.0)
            except Exception as exc:  # noqa: BLE001
                self._disable(exc)
            return results

        return call

    def close(self) -> None:
        self._original_close()
        collection = self._source.poll()
        if collection is not None and not sys.is_finalizing():  # at shutdown the atexit handler reports
            collection.run.write_reports()

    # ----- one iteration ------------------------------------------------------------------
    def _run_iteration(self, fetches: Any, feed_dict: Any, options: Any, run_metadata: Any) -> Any:
        state = self._state
        assert state is not None
        run, iteration_id = state.counter.begin()
        collection = self._source.poll()
        keep_trace = tasks = False
        if collection is not None and collection.active:
            keep_trace, tasks = collection.wants(iteration_id)
        # Learn the global step once, so a dynamic window's start_step means the real step.
        sync_step = self._dynamic and not state.counter.knows_step and state.points.global_step is not None
        probe = (keep_trace or sync_step) and state.probes is not None
        if not probe and not tasks:
            out = self._counted(state, run, self._original_run, fetches, feed_dict, options, run_metadata)
            self._source.after_iteration(iteration_id)
            return out
        run_fetches = [fetches, state.probes.fetch] if probe else fetches
        if tasks:
            options = full_trace_options(options)
            run_metadata = RawRunMetadata(run_metadata)
        start = time.time()
        out = self._counted(state, run, self._original_run, run_fetches, feed_dict, options, run_metadata)
        end = time.time()
        results = out[0] if probe else out
        try:
            vector = out[1] if probe else None
            self._record(state, collection, run, iteration_id, vector, keep_trace, run_metadata if tasks else None, start, end)
        except Exception as exc:  # noqa: BLE001 - profiling must never hurt the job
            self._disable(exc)
        return results

    @staticmethod
    def _counted(state: _GraphState, run: int, call: Any, *args: Any, **kwargs: Any) -> Any:
        """`call(...)`, un-counting iteration `run` if it raises (its error propagates unchanged)."""
        try:
            return call(*args, **kwargs)
        except BaseException:
            state.counter.cancel(run)
            raise

    def _record(self, state: _GraphState, collection: Collection | None, run: int, iteration_id: int,
                vector: Any, keep_trace: bool, run_metadata: Any, start: float, end: float) -> None:
        """Store what the run produced; `keep_trace` False means the probes only synced the step."""
        step = None
        if vector is not None:
            probe_layout = state.probes.layout
            step = probe_layout.step(vector)
            state.counter.saw_step(run, step)
            if collection is not None and keep_trace:
                model = state.model_in(collection.run, self._graph, collection.task_trace, self._source)
                collection.run.record_trace_line(probe_layout.record_line(model.model_id, run, vector))
        if run_metadata is not None and collection is not None:
            model = state.model_in(collection.run, self._graph, True, self._source)
            collection.run.record_tasks(model, run, step, run_metadata.step_stats_bytes(), start * 1e6, end * 1e6)
        self._source.after_iteration(iteration_id)

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
        if state.points.iteration_end not in state.index.ancestors(known):
            return False
        waited = state.probes.waited_ops if state.probes is not None else frozenset()
        fed_ops = {_op_name(self._graph, k) for k in (feed_dict or {})}
        clash = sorted(fed_ops & waited)
        collection = self._source.poll()
        if clash and collection is not None:
            collection.run.add_note(
                f"runs feeding {', '.join(clash)} are not traced: the probes wait on those ops, and a fed op does not run"
            )
        return not clash

    def _discover(self) -> bool:
        """Find trace points (and build probes) once the graph has a training step."""
        version = self._graph.version
        if version == self._checked_version or self._attempts >= MAX_DISCOVERY_ATTEMPTS:
            return False
        self._checked_version = version
        self._attempts += 1
        shared = _GRAPH_STATES.get(self._graph)
        if shared is not None:
            self._state = shared
            return True
        discovery = analyse(self._graph)  # one GraphDef and index, shared by discovery and the probes
        chosen = choose_points(discovery, self._source.asked_points())
        points = chosen.points
        collection = self._source.poll()
        if not points.is_training or points.iteration_end is None:
            if self._attempts >= MAX_DISCOVERY_ATTEMPTS and collection is not None:
                collection.run.add_note(f"no training step found in graph {id(self._graph):#x}; its runs are not traced")
            return False
        for option, record in chosen.fallbacks.items():
            self._source.note(fallback_note(option, record))
        index = discovery.index
        probes = None
        if self._dynamic or (collection is not None and collection.training_trace):
            probes = build_probes(self._graph, points, index, user_bp=chosen.user_bp, may_rewire=self._runs_seen <= 1)
        if collection is not None:
            if probes is not None and probes.not_rewired:
                collection.run.add_note(
                    "probes wait on, but could not be wired into, " + ", ".join(sorted(set(probes.not_rewired))[:5])
                    + ": their times may be late by the executor's scheduling (control-flow context, or the session ran before the model was complete)"
                )
            for reason in points.warnings:
                collection.run.add_note(reason)
        self._state = _GraphState(points, probes, index, self._graph.version, _fingerprint(self._graph, points),
                                  IterationCounter(), {}, chosen)
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
    """The shape of a training graph: a rebuilt graph (e.g. repeated Estimator.train calls) has the same one."""
    text = "|".join([str(points.iteration_end), str(points.fp), str(points.bp), ",".join(points.get_next)])
    text += f"|{len(graph.get_operations())}"
    return hashlib.sha1(text.encode("utf-8")).hexdigest()
