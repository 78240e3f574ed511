"""Profiling attached to one `tf.compat.v1.Session`: which runs are iterations, and recording them.

A run is an iteration when its fetches (transitively) execute the traced train
op. Its step-trace row is written in the graph (`ring`) by an op the train op
waits on, so the run itself goes to TensorFlow unchanged; a `Recorder` drains the
rows in batches and, on the iterations a window selects, asks for FULL_TRACE step
stats (task_trace). Every other run (init, loss-only, summaries, evaluation) goes
to TensorFlow untouched. The decision is cached per (fetches, feeds) shape, so
the steady-state cost of a step in Python is one dict lookup and the recorder's
counter.

The session's life is a small state machine (`SessionState`, one transition
table): it waits for a training step (trace points are discovered lazily, at the
first run after the graph has one, because scripts often create the session
before building the model), then records; it gives up on graphs that never get
a training step, turns itself off with one warning after an internal failure,
and drains what is left when the session closes. Errors raised by the user's own
run propagate unchanged. An fp_point or bp_point the graph does not have is a
note, and the automatic point is used instead (see `chosen_points`): profiling
never stops a job.

Each graph gets its own Model ID, even when two graphs are identical, so rows of
two models never mix; the one exception is a rebuilt graph that carries on an
earlier identical graph's global step (an Estimator's repeated `train()`
restoring its checkpoint), which continues that graph's Model ID.
"""
from __future__ import annotations

import enum
import hashlib
import itertools
import sys
import threading
import warnings
import weakref
from dataclasses import dataclass, field
from typing import Any, Callable, Hashable

import tensorflow as tf

from npu_tf_profiling.graph_points import GraphIndex, TracePoints, analyse, optypes
from npu_tf_profiling.raw_format.call_sites import TRAINING_RUN
from npu_tf_profiling.raw_format.layout import K_ITERATION_END_CHECK
from npu_tf_profiling.runtime import call_sites, other_runs, tf_private
from npu_tf_profiling.runtime.session.finalizer import called_by_finalizer
from npu_tf_profiling.runtime.session.fed_arrays import FEEDS_KEY, FeedWatch
from npu_tf_profiling.runtime.chosen_points import FALLBACK_KEY, ChosenPoints, choose_points, fallback_note, not_applied_note
from npu_tf_profiling.runtime.collection import CollectionSource
from npu_tf_profiling.runtime.fetches import fetch_key, fetch_leaves, op_name
from npu_tf_profiling.runtime.probes import GraphProbes, build_probes, process_clock
from npu_tf_profiling.runtime.profiling_run import ModelEntry, ProfilingRun
from npu_tf_profiling.runtime.session.recorder import Recorder, StepsSeen

# Give up looking for a training step after this many graph versions (inference-only scripts).
MAX_DISCOVERY_ATTEMPTS = 8


@dataclass
class _GraphState:
    """What one graph's training step is, shared by every profiled session on it."""

    points: TracePoints
    probes: GraphProbes | None  # None when no collection can want the step trace
    index: GraphIndex
    index_version: int
    fingerprint: str
    models: dict[int, ModelEntry]  # id(ProfilingRun) -> this graph's model there
    chosen: ChosenPoints
    op_types: dict[str, str] | None = None
    runs_taken: int = 0  # the highest run number a session of this graph handed out
    steps: StepsSeen = field(default_factory=StepsSeen)
    end_check: dict[str, Any] | None = None  # the iteration end's self-check (`end_returns`), once decided

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
            if self.end_check is not None:
                entry[K_ITERATION_END_CHECK] = self.end_check
            with _MODEL_LOCK:
                model = run.register_model(self._model_key(run), entry, self.op_types if task_trace else None)
            call_sites.note_caller(TRAINING_RUN, {"model_id": model.model_id})  # the user's line running the step
            self.models[id(run)] = model
            for option, record in fallbacks.items():
                if record != self.chosen.fallbacks.get(option):
                    source.note(not_applied_note(option, record))
        return model

    def _model_key(self, run: ProfilingRun) -> str:
        """This graph's key among `run`'s models: its own, unless it carries on an identical graph's steps."""
        shape = (id(run), self.fingerprint)
        previous = _LATEST_OF_SHAPE.get(shape)
        if previous is not None and _carries_on(previous[1], self.steps):
            key = previous[0]
        else:
            key = f"{self.fingerprint}/{next(_GRAPH_SERIALS)}"
        _LATEST_OF_SHAPE[shape] = (key, self.steps)
        return key


def _carries_on(earlier: StepsSeen, later: StepsSeen) -> bool:
    """`later` continues `earlier`'s global step (a checkpoint restored), so it is the same model.

    Judged by `later`'s *first* step: rows are read in batches, so by the time `later`
    registers, its latest step may already be ahead of a concurrent graph's.
    """
    return earlier.last is not None and later.first is not None and later.first > earlier.last


_GRAPH_STATES: "weakref.WeakKeyDictionary[tf.Graph, _GraphState]" = weakref.WeakKeyDictionary()
# (id(ProfilingRun), graph fingerprint) -> (model key, steps seen) of the graph of that shape registered last.
_LATEST_OF_SHAPE: dict[tuple[int, str], tuple[str, StepsSeen]] = {}
_GRAPH_SERIALS = itertools.count(1)
_MODEL_LOCK = threading.Lock()


class SessionState(enum.Enum):
    """Where one profiled session is in its life."""

    WAITING = "waiting for a training step"  # rechecked each time the graph grows
    RECORDING = "recording"  # trace points found: iterations go to a Recorder
    NO_TRAINING_STEP = "no training step"  # gave up after MAX_DISCOVERY_ATTEMPTS graph versions
    DISABLED = "disabled"  # an internal failure turned profiling off; runs pass through
    CLOSED = "closed"


class SessionEvent(enum.Enum):
    FOUND = "trace points found"
    GAVE_UP = "no training step after many graph versions"
    FAILED = "internal failure"
    CLOSED = "session closed"


_S, _E = SessionState, SessionEvent
# (state, event) -> next state; a pair that is not listed leaves the state as it is.
_TRANSITIONS: dict[tuple[SessionState, SessionEvent], SessionState] = {
    (_S.WAITING, _E.FOUND): _S.RECORDING,
    (_S.WAITING, _E.GAVE_UP): _S.NO_TRAINING_STEP,
    (_S.WAITING, _E.FAILED): _S.DISABLED,
    (_S.RECORDING, _E.FAILED): _S.DISABLED,
    (_S.WAITING, _E.CLOSED): _S.CLOSED,
    (_S.RECORDING, _E.CLOSED): _S.CLOSED,
    (_S.NO_TRAINING_STEP, _E.CLOSED): _S.CLOSED,
    (_S.DISABLED, _E.CLOSED): _S.CLOSED,
}


def next_state(state: SessionState, event: SessionEvent) -> SessionState:
    return _TRANSITIONS.get((state, event), state)


_NOT_CACHED = object()
_FED_ITERATION = object()  # an iteration whose feeds replace tensors the probes wait on
_STEP_WRITE = object()  # not an iteration, but it writes the global step the ring's rows are keyed by
_UNTRACED_TRAINING = object()  # not an iteration, but it runs backprop: a train op other than the iteration end
SILENT_RUNS = 3  # runs of backprop without the iteration end, none of it before, that are worth a word
SILENT_RUNS_NOTE = (
    "{runs} runs computed gradients without running the iteration end {end}, and no run has run it yet: "
    "those runs write no step-trace row (fetch {end}, or the op that runs it, in the training runs; "
    "`npu-tf-prof points` shows the train op candidates)"
)
# Ops that write a variable: one whose first input is the global step writes the step.
_VARIABLE_WRITES = frozenset({
    "Assign", "AssignVariableOp", "AssignAdd", "AssignAddVariableOp", "AssignSub", "AssignSubVariableOp",
})


class SessionProfiler:
    """Wraps `session.run`/`close`/callables of one session; `source` says what to collect, and with which points."""

    def __init__(self, session: Any, source: CollectionSource, *, dynamic: bool) -> None:
        self._session = session
        self._graph: tf.Graph = session.graph
        self._source = source
        # Dynamic collections may want the step trace later, and probes can only be wired in
        # before the session first runs; so a dynamic session always prepares them.
        self._dynamic = dynamic
        self.state = SessionState.WAITING
        self._original_run = session.run
        self._original_close = session.close
        # (fetch shape) or (fetch shape, fed names) -> the Recorder's run for an iteration, None otherwise.
        self._plans: dict[Hashable, Callable[..., Any] | None] = {}
        self._other_kinds: dict[Hashable, tuple[str, str | None]] = {}  # fetch shape -> (kind, name) of a non-iteration
        self._state: _GraphState | None = None
        self._recorder: Recorder | None = None
        self._checked_version = -1
        self._attempts = 0
        self._runs_seen = 0  # TensorFlow ignores edits to ops once the session has loaded them
        self._untraced_training_runs = 0  # runs of backprop that did not run the iteration end (never silent)
        self._feeds: FeedWatch | None = FeedWatch()  # the first iterations' feeds (`fed_arrays`), then None
        self._original_make_callable = session.make_callable
        self._original_make_callable_from_options = tf_private.make_callable_from_options(session)
        session.run = self.run
        session.close = self.close
        # `make_callable` and Keras in graph mode run steps through callables, not `run`.
        session.make_callable = self.make_callable
        tf_private.replace_make_callable_from_options(session, self._make_callable_from_options)

    def _advance(self, event: SessionEvent) -> None:
        self.state = next_state(self.state, event)
        self._plans.clear()  # every cached decision was made in the old state

    # ----- the wrapped Session API --------------------------------------------------------
    def run(self, fetches: Any, feed_dict: Any = None, options: Any = None, run_metadata: Any = None) -> Any:
        try:
            plan = self._plans.get(fetch_key(fetches) if not feed_dict else (fetch_key(fetches), frozenset(feed_dict)), _NOT_CACHED)
        except TypeError:
            plan = _NOT_CACHED  # unhashable fetch structure: decide every time
        if plan is _NOT_CACHED:
            plan = self._decide(fetches, feed_dict)
        if plan is None:
            return self._other_run(fetches, feed_dict, options, run_metadata)
        if feed_dict and self._feeds is not None:
            self._watch_feeds(feed_dict)
        return plan(fetches, feed_dict, options, run_metadata)

    def _watch_feeds(self, feed_dict: Any) -> None:
        """An iteration's feeds, until `fed_arrays` decides whether they are the same each time (info.json)."""
        try:
            found = self._feeds.observe(feed_dict) if self._feeds is not None else None
            collection = self._source.poll() if found is not None else None
            if found is not None:
                self._feeds = None
            if collection is not None and self._state is not None:
                model = self._state.model_in(collection.run, self._graph, collection.task_trace, self._source)
                collection.run.note_model(model, FEEDS_KEY, found)
        except Exception:  # noqa: BLE001 - profiling must never hurt the job: the finding is just not made
            self._feeds = None

    def _other_run(self, fetches: Any, feed_dict: Any, options: Any, run_metadata: Any) -> Any:
        """A run that is not an iteration: timed into other_runs.jsonl while the step trace is recorded
        (an evaluation between steps shows as such, not as input; `runtime.other_runs`)."""
        def run() -> Any:
            return self._original_run(fetches, feed_dict, options, run_metadata)

        if self.state in (SessionState.DISABLED, SessionState.CLOSED):
            return run()
        try:
            collection = self._source.poll()
            kind = self._other_kind(fetches) if other_runs.recording(collection) else None
        except Exception:  # noqa: BLE001 - profiling must never hurt the job: the run goes untimed
            kind = None
        if kind is None:
            return run()
        return other_runs.timed(collection, kind[0], kind[1], run)

    def _other_kind(self, fetches: Any) -> tuple[str, str | None]:
        """(kind, first fetched op) of a run that is not an iteration, once per fetch shape."""
        try:
            key = fetch_key(fetches)
            known = self._other_kinds.get(key)
        except TypeError:
            key, known = None, None
        if known is None:
            names = [op_name(self._graph, leaf) for leaf in fetch_leaves(fetches)]
            known = (other_runs.session_run_kind(self._graph, fetches), next((n for n in names if n), None))
            if key is not None:
                self._other_kinds[key] = known
        return known

    def _decide(self, fetches: Any, feed_dict: Any) -> Callable[..., Any] | None:
        """The plan for a run whose shape is not cached yet (and cache it when the state allows)."""
        self._runs_seen += 1
        if self.state not in (SessionState.WAITING, SessionState.RECORDING):
            return None
        try:
            iteration = self._is_iteration(fetches, feed_dict)
        except Exception as exc:  # noqa: BLE001 - profiling must never hurt the job
            self._disable(exc)
            return None
        if iteration is _STEP_WRITE:
            plan = self._drain_then_run
        elif iteration is _UNTRACED_TRAINING:
            plan = self._untraced_training_run
        elif not iteration:
            plan = None
        elif iteration is _FED_ITERATION:
            plan = self._recorder_for_session().run_unrecorded
        else:
            plan = self._recorder_for_session().run
        if self.state is SessionState.DISABLED:  # making the recorder failed
            if self._recorder is not None:
                self._recorder.abandon()
            return None
        if self.state is SessionState.RECORDING:
            try:
                key = fetch_key(fetches) if not feed_dict else (fetch_key(fetches), frozenset(feed_dict))
                self._plans[key] = plan
            except TypeError:
                pass
        return plan

    def _drain_then_run(self, fetches: Any, feed_dict: Any, options: Any, run_metadata: Any) -> Any:
        """A run that writes the global step (a checkpoint restored, the step set): the rows keyed by
        the step so far are read first, since rows of a step that comes again would overwrite them."""
        recorder = self._recorder
        if recorder is None or recorder.closed:
            return self._original_run(fetches, feed_dict, options, run_metadata)
        try:
            recorder.drain(wait=True)
        except Exception as exc:  # noqa: BLE001 - profiling must never hurt the job
            self._disable(exc)
        out = self._original_run(fetches, feed_dict, options, run_metadata)
        try:
            recorder.step_written()
        except Exception as exc:  # noqa: BLE001
            self._disable(exc)
        return out

    def _untraced_training_run(self, fetches: Any, feed_dict: Any, options: Any, run_metadata: Any) -> Any:
        """A run of backprop that does not run the iteration end: counted, and said once when no iteration ran before."""
        out = self._other_run(fetches, feed_dict, options, run_metadata)  # not an iteration: timed as the others
        self._untraced_training_runs += 1
        if self._untraced_training_runs == SILENT_RUNS and self._recorder is None and self._state is not None:
            collection = self._source.poll()
            if collection is not None and collection.training_trace:
                collection.run.add_note(SILENT_RUNS_NOTE.format(runs=SILENT_RUNS, end=self._state.points.iteration_end))
        return out

    def _recorder_for_session(self) -> Recorder:
        if self._recorder is None:
            assert self._state is not None
            self._recorder = Recorder(
                self._original_run, self._original_make_callable_from_options, self._graph, self._state, self._source, self._disable
            )
        return self._recorder

    def make_callable(self, fetches: Any, feed_list: Any = None, accept_options: bool = False) -> Any:
        """`Session.make_callable`; a callable that runs the train op is an iteration.

        With a feed list TensorFlow's callable calls `run`, which is already profiled.
        """
        recorder = self._callable_recorder(fetches, {}) if feed_list is None else None
        if recorder is None:
            return self._original_make_callable(fetches, feed_list, accept_options)
        extra = self._extra_targets()
        inner = self._original_make_callable([fetches, *extra] if extra else fetches, None, accept_options)
        if extra:
            return lambda *args, **kwargs: recorder.call(inner, *args, **kwargs)[0]
        return lambda *args, **kwargs: recorder.call(inner, *args, **kwargs)

    def _make_callable_from_options(self, callable_options: Any) -> Any:
        """The CallableOptions form Keras uses in graph mode; same idea as `make_callable`."""
        names = list(callable_options.fetch) + list(callable_options.target)
        recorder = self._callable_recorder(names, dict.fromkeys(callable_options.feed))
        if recorder is None:
            return self._original_make_callable_from_options(callable_options)
        extra = self._extra_targets()
        if extra:
            options = type(callable_options)()
            options.CopyFrom(callable_options)
            options.target.extend(op.name for op in extra)
            callable_options = options
        inner = self._original_make_callable_from_options(callable_options)
        return lambda *args, **kwargs: recorder.call(inner, *args, **kwargs)

    def _extra_targets(self) -> tuple[Any, ...]:
        """What a training callable must also run: the ring write, where it is not wired into the train op."""
        probes = self._state.probes if self._state is not None else None
        return () if probes is None or probes.gated else (probes.ring.write,)

    def _callable_recorder(self, fetches: Any, feeds: dict) -> Recorder | None:
        """The recorder when a callable of these fetches is a training step, else None. Callables are fixed when
        made, so the window decides what is recorded when the ring is drained (no task_trace FULL_TRACE on them)."""
        plan = self._decide(fetches, feeds)
        iteration = plan is not None and plan != self._drain_then_run
        return self._recorder if iteration and self._state is not None and self._state.probes is not None else None

    def close(self) -> None:
        if self._recorder is not None:
            self._recorder.close()  # the last rows, while the session can still run
        self._advance(SessionEvent.CLOSED)
        self._original_close()
        collection = self._source.poll()
        if collection is not None and not sys.is_finalizing() and not called_by_finalizer():
            collection.run.write_reports()  # else the atexit handler reports (profiling_run._finish_all)

    # ----- deciding what is an iteration ----------------------------------------------------
    def _is_iteration(self, fetches: Any, feed_dict: Any) -> bool | object:
        if self._state is None and not self._discover():
            return False
        return self._plan(fetches, feed_dict)

    def _plan(self, fetches: Any, feed_dict: Any) -> bool | object:
        state = self._state
        assert state is not None
        names = [op_name(self._graph, e) for e in fetch_leaves(fetches)]
        names = [n for n in names if n is not None]
        if any(n not in state.index for n in names) and self._graph.version != state.index_version:
            state.index = GraphIndex.from_graph(self._graph)
            state.index_version = self._graph.version
        known = [n for n in names if n in state.index]
        ancestors = state.index.ancestors(known)
        if state.points.iteration_end not in ancestors:
            if self._writes_keyed_step(ancestors):
                return _STEP_WRITE
            return _UNTRACED_TRAINING if any(optypes.is_gradient_name(n) for n in ancestors) else False
        waited = state.probes.waited_ops if state.probes is not None else frozenset()
        fed_ops = {op_name(self._graph, k) for k in (feed_dict or {})}
        clash = sorted(fed_ops & waited)
        collection = self._source.poll()
        if clash and collection is not None:
            collection.run.add_note(
                f"runs feeding {', '.join(clash)} are not recorded: the step-trace points at those ops would not mean "
                "what they say (a fed data input does not run; other fed ops still run, since the probes wait on them)"
            )
        return _FED_ITERATION if clash else True

    def _writes_keyed_step(self, ops: set[str]) -> bool:
        """Whether running `ops` writes the global step the ring's rows are keyed by."""
        state = self._state
        assert state is not None
        if state.probes is None or not state.probes.ring.keyed_by_step:
            return False
        step = state.points.global_step
        index = state.index
        return any(
            index.op_type(name) in _VARIABLE_WRITES and (index.inputs(name) or [""])[0].split(":")[0] == step for name in ops
        )

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
            self._advance(SessionEvent.FOUND)
            return True
        discovery = analyse(self._graph)  # one GraphDef and index, shared by discovery and the probes
        chosen = choose_points(discovery, self._source.asked_points())
        points = chosen.points
        collection = self._source.poll()
        if not points.is_training or points.iteration_end is None:
            if self._attempts >= MAX_DISCOVERY_ATTEMPTS:
                self._advance(SessionEvent.GAVE_UP)
                if collection is not None:
                    collection.run.add_note(f"no training step found in graph {id(self._graph):#x}; its runs are not traced")
            return False
        for option, record in chosen.fallbacks.items():
            self._source.note(fallback_note(option, record))
        index = discovery.index
        probes = None
        if self._dynamic or (collection is not None and collection.training_trace):
            clock, clock_note = process_clock()
            if clock_note and collection is not None:
                collection.run.add_note(clock_note)
            probes = build_probes(
                self._graph, points, index, user_bp=chosen.user_bp, may_rewire=self._runs_seen <= 1, clock=clock,
                step_shared=_on_a_server(self._session),
            )
        if collection is not None:
            if probes is not None and probes.not_rewired:
                collection.run.add_note(
                    "probes wait on, but could not be wired into, " + ", ".join(sorted(set(probes.not_rewired))[:5])
                    + ": their times may be late by the executor's scheduling (control-flow context, an op of another task, or the session ran before the model was complete)"
                )
            for reason in (*points.warnings, *(probes.notes if probes is not None else ())):
                collection.run.add_note(reason)
        self._state = _GraphState(points, probes, index, self._graph.version, _fingerprint(self._graph, points), {}, chosen)
        _GRAPH_STATES[self._graph] = self._state
        self._advance(SessionEvent.FOUND)
        return True

    def _disable(self, exc: BaseException) -> None:
        if self.state is SessionState.DISABLED:
            return
        self._advance(SessionEvent.FAILED)
        if self._recorder is not None:
            self._recorder.abandon()
        warnings.warn(
            f"npu_tf_profiling: profiling turned off for this session after an internal error ({exc!r}); training continues",
            RuntimeWarning,
            stacklevel=3,
        )


def _on_a_server(session: Any) -> bool:
    """Whether the session runs on a server's target (``grpc://...``), where other sessions (workers)
    may share its variables, the global step included; an in-process session's target is empty."""
    return bool(getattr(session, "sess_str", b""))


def _fingerprint(graph: tf.Graph, points: TracePoints) -> str:
    """The shape of a training graph: a rebuilt graph (e.g. repeated Estimator.train calls) has the same one."""
    text = "|".join([str(points.iteration_end), str(points.fp), str(points.bp), ",".join(points.get_next)])
    text += f"|{len(graph.get_operations())}"
    return hashlib.sha1(text.encode("utf-8")).hexdigest()
