"""One session's recording of its training graph: the per-run fast path, batched drains, task_trace runs.

Every run of the train op writes its row into the in-graph ring (`ring`), so an
ordinary iteration costs Python one counter increment and one comparison before
the user's `run` goes to TensorFlow unchanged.

A reader thread (one per process, `ring_reader`) drains every session's ring each
DRAIN_INTERVAL_S: one extra `run` that reads the rows written since the last
drain (two where the rows are keyed by the global step: its value first), decoded
with NumPy and appended to the raw file as one binary frame. It never races the
writer: a row is written whole by one insert, and a row still in flight waits for
the next drain. So a SIGKILL loses at most the iterations of the
last DRAIN_INTERVAL_S, even when the process is stuck inside a step, and the
training thread never pauses to drain. The training thread itself drains only
after DRAIN_EVERY_RUNS unread iterations (so the ring cannot overflow), at a
schedule cycle's end, and at close. It also *checks* a run before it goes when
the collection in force wants task_trace there (FULL_TRACE must be asked for
before the run), and the first iteration of a session, which drains at once so
that the global step is known from the start.

Run numbers: each session counts its train op runs (`seq`: the ring's counter, or,
where the rows are keyed by the step, the order of the steps); a session's first
checked run takes a base from the graph's count so far, and `run = base + seq`.
Sessions used one after the other therefore number a graph's iterations
continuously; two sessions training one graph at the same time share numbers.
"""
from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Protocol

import numpy as np
from tensorflow.core.protobuf import config_pb2

from npu_tf_profiling.config.schedule import ScheduleAction
from npu_tf_profiling.raw_format.training_frame import NO_STEP, encode_frame
from npu_tf_profiling.runtime.anomaly_watch import IntervalGate
from npu_tf_profiling.runtime.collection import Collection
from npu_tf_profiling.runtime.probes import GraphProbes
from npu_tf_profiling.runtime.ring import RING_ROWS, RingOps
from npu_tf_profiling.runtime.ring_reader import read_in_the_background, stop_reading
from npu_tf_profiling.runtime.session.end_returns import SessionEndCheck
from npu_tf_profiling.runtime.session.step_stats_capture import RawRunMetadata, full_trace_options

DRAIN_EVERY_RUNS = RING_ROWS // 2


class Source(Protocol):
    def poll(self) -> Collection | None: ...

    def after_iteration(self, iteration_id: int) -> None: ...

    def note(self, message: str) -> None: ...


@dataclass
class StepsSeen:
    """The first and the latest global step of a graph's recorded iterations (None: none seen yet)."""

    first: int | None = None
    last: int | None = None


class GraphRecording(Protocol):
    """What a recorder needs from its graph's shared state."""

    probes: GraphProbes | None
    runs_taken: int  # the highest run number any session of the graph has handed out
    steps: StepsSeen  # the latest global step its recorded iterations reached
    end_check: dict[str, Any] | None  # the iteration end's self-check, once a session of the graph decided it

    def model_in(self, run: Any, graph: Any, task_trace: bool, source: Any) -> Any: ...


class Recorder:
    """Records one session's iterations of one graph (see the module docstring)."""

    def __init__(self, session_run: Callable[..., Any], make_callable: Callable[[Any], Callable[..., Any]], graph: Any,
                 state: GraphRecording, source: Source, on_error: Callable[[BaseException], None]) -> None:
        self._run = session_run
        self._make_callable = make_callable  # the session's own `_make_callable_from_options`
        self._reads: _RingReads | None = None
        self._graph = graph
        self._state = state
        self._source = source
        self._on_error = on_error
        probes = state.probes
        self._probes = probes
        ring = probes.ring if probes is not None else None
        # What an ordinary iteration adds to the user's fetches: nothing when the ring write is wired in.
        self._extra: tuple[Any, ...] = () if ring is None or probes.gated else (ring.write,)
        self._times_from = 2 if ring is not None and ring.has_step else 1
        self.issued = 0  # iteration runs this session made (the predicted seq of the last one)
        self._base: int | None = None
        self._seq_done = 0  # runs whose rows were read (recorded, or counted as lost)
        self._key_done: int | None = None  # the ring key of the last row read
        self._step: int | None = None
        self._seq_at_step = 0
        self._collection: Collection | None = None
        self._collection_from = 0  # rows with a larger seq belong to the collection in force
        self._runs_at_drain = 0
        self._check_at = 1  # the first iteration is checked: it takes a base and drains at once
        self.closed = False
        self._draining = threading.Lock()
        self._unrecorded: set[int] = set()  # seqs of fed iterations (`run_unrecorded`)
        self._gate: IntervalGate | None = None  # anomaly_capture's look at each run's start (set once rows are recorded)
        # The iteration end's self-check (`end_returns`): its first runs' host returns against their rows.
        self._end = SessionEndCheck(probes.iteration_end) if probes is not None and state.end_check is None else None
        read_in_the_background(self)
        if probes is not None:
            # TensorFlow builds an executor for each new fetch signature (tens of ms): pay it for the
            # drain now, before this session's first iteration, not in the middle of training.
            self._guarded(lambda: self._read_ring(settled=True))  # reads nothing: no row of this session is written yet
        # Runs the graph's counter already holds are not this session's: a server keeps a graph's ring
        # across sessions (a session recovered on the same graph), and this one's runs follow them.
        self._seq_origin = self._seq_done = self.issued

    @property
    def _ring_reads(self) -> "_RingReads":
        if self._reads is None:
            self._reads = _RingReads(self._make_callable, self._probes.ring)
        return self._reads

    # ----- the per-run path -----------------------------------------------------------------
    def run(self, fetches: Any, feed_dict: Any, options: Any, run_metadata: Any) -> Any:
        self.issued += 1
        gate = self._gate
        if gate is not None:  # anomaly_capture's look: was the iteration just finished slow? (runtime.anomaly_watch)
            slow_s = gate.started(time.perf_counter())
            if slow_s:
                self._guarded(lambda: gate.hint(self.next_iteration_id() - 1, slow_s))
                self._check_at = self.issued  # this run asks whether to trace its tasks
        if self.issued < self._check_at:
            try:
                if not self._extra:
                    return self._run(fetches, feed_dict, options, run_metadata)
                return self._run([fetches, *self._extra], feed_dict, options, run_metadata)[0]
            except BaseException:
                self.issued -= 1  # it raised (e.g. end of data): not an iteration
                raise
        return self._checked_run(fetches, feed_dict, options, run_metadata)

    def run_unrecorded(self, fetches: Any, feed_dict: Any, options: Any, run_metadata: Any) -> Any:
        """An iteration whose feeds replace tensors the probes wait on: counted, its row dropped."""
        self._unrecorded.add(self.issued + 1)
        return self._checked_run(fetches, feed_dict, options, run_metadata)

    def call(self, inner: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """One call of a session callable that runs the train op (task_trace is not applied to callables)."""
        self.issued += 1
        try:
            out = inner(*args, **kwargs)
        except BaseException:
            self.issued -= 1
            raise
        if self.issued >= self._check_at:
            if self._end is not None and self._end.sampling(self.issued):
                self._end.returned(self.issued, time.time())
            self._guarded(self._poll)
            self._guarded(self._checkpoint)
        return out

    def _checked_run(self, fetches: Any, feed_dict: Any, options: Any, run_metadata: Any) -> Any:
        collection = self._guarded(self._poll)
        tasks = bool(self._guarded(lambda: self._wants_tasks(collection)))
        extra = self._extra + ((self._probes.ring.row,) if tasks and self._probes is not None else ())
        run_fetches = [fetches, *extra] if extra else fetches
        if tasks:
            options = full_trace_options(options)
            run_metadata = RawRunMetadata(run_metadata)
        start = time.time()
        try:
            out = self._run(run_fetches, feed_dict, options, run_metadata)
        except BaseException:
            self.issued -= 1
            raise
        end = time.time()
        if self._end is not None and self._end.sampling(self.issued):
            self._end.returned(self.issued, end)
        if tasks:
            self._guarded(lambda: self._record_tasks(out[-1] if self._probes is not None else None, run_metadata, start, end))
        self._guarded(self._checkpoint)
        return out[0] if extra else out

    def _guarded(self, work: Callable[[], Any]) -> Any:
        try:
            return work()
        except Exception as exc:  # noqa: BLE001 - profiling must never hurt the job
            self._on_error(exc)
            return None

    # ----- checks -----------------------------------------------------------------------------
    def _poll(self) -> Collection | None:
        """The collection in force now; rows made before it came in force are not its."""
        collection = self._source.poll()
        if collection is not self._collection:
            self._collection = collection
            self._collection_from = self.issued - 1
        if self._base is None:
            self._base = self._state.runs_taken - self._seq_origin
        return collection

    def _wants_tasks(self, collection: Collection | None) -> bool:
        """Whether the run in progress gets FULL_TRACE."""
        if collection is None or not collection.active or not collection.captures_tasks:
            return False
        return collection.wants(self.next_iteration_id())[1]

    def next_iteration_id(self) -> int:
        """The Iteration ID of the run in progress: the global step once one is known, else the run number."""
        if self._step is not None:
            return self._step + (self.issued - self._seq_at_step)
        return (self._base or 0) + self.issued

    def _checkpoint(self) -> None:
        """After a checked run: drain when the ring must be read now, and decide which run is checked next."""
        # Until a row has been read, a checked run reads at once, waiting out a reader turn under way: that
        # turn may have come while this run's row was in flight, and found nothing.
        first = self._seq_done == 0
        if first or self.issued - self._runs_at_drain >= DRAIN_EVERY_RUNS:
            self.drain(wait=first)
        self._schedule_checks()

    def _schedule_checks(self) -> None:
        collection = self._collection
        per_run = collection is not None and collection.active and collection.captures_tasks
        per_run = per_run or (self._end is not None and self._end.sampling(self.issued + 1))
        self._check_at = self.issued + 1 if per_run else self._runs_at_drain + DRAIN_EVERY_RUNS

    def read_in_background(self) -> None:
        """The reader thread's turn: poll the collection (a dynamic one may have come), drain."""
        if self.closed or self.issued == 0:
            return
        try:
            self._poll()
            self.drain(settled=False)
        except Exception as exc:  # noqa: BLE001 - profiling must never hurt the job
            if not self.closed:  # a session closed behind the wrapper's back just stops being read
                self._on_error(exc)
        # The training thread checks its next run too: it polls the collection itself (a dynamic
        # edit then takes effect at that run, not a reader turn later) and schedules what follows.
        self._check_at = self.issued + 1

    # ----- draining the ring ------------------------------------------------------------------
    def drain(self, wait: bool = False, settled: bool = True) -> None:
        """Read the rows written since the last drain, record them, and let the windows act on them.

        Another thread draining this session takes these rows too, so this one returns
        at once, unless `wait` (at close, which must not miss the last rows). `settled`: called
        by the training thread between its runs (none of its runs in flight); the reader thread's
        turns are not (see `_step_keys`).
        """
        probes = self._probes
        if probes is None or not self._draining.acquire(blocking=wait):
            return
        try:
            if not self.closed:
                self._drain_locked(probes, settled)
        finally:
            self._draining.release()

    def _drain_locked(self, probes: GraphProbes, settled: bool) -> None:
        self._runs_at_drain = max(self.issued, 1)
        fresh = self._read_ring(settled)
        if not len(fresh):
            self._check_end(fresh)  # the sample's last returns may come after its rows (a session closing then)
            return
        seqs = fresh[:, 0].astype(np.int64)
        if self._base is None:
            self._base = self._state.runs_taken - self._seq_origin
        self._state.runs_taken = max(self._state.runs_taken, self._base + self._seq_done)
        steps = fresh[:, 1].astype(np.int64) if probes.ring.has_step else None
        if steps is not None:
            self._step, self._seq_at_step = int(steps[-1]), int(seqs[-1])
            seen = self._state.steps
            if seen.first is None:
                seen.first = int(steps[0])
            seen.last = self._step
        ids = steps if steps is not None else self._base + seqs
        mine = seqs > self._collection_from
        if self._unrecorded:
            mine &= ~np.isin(seqs, list(self._unrecorded))
            self._unrecorded = {seq for seq in self._unrecorded if seq > seqs[-1]}
        rows = fresh[mine]
        self._record(rows, ids[mine])
        self._check_end(rows)
        self._source.after_iteration(int(ids[-1]))

    def _read_ring(self, settled: bool) -> np.ndarray:
        """The rows after the last drained one, in order, as ``[seq, step?, stamps..., end]``.

        Up to the runs this session has issued (the last one may still be in
        flight). The newest rows may be in flight (a run on another thread): they wait
        for the next drain. A row missing before a complete one never comes (its run
        stopped between the key and the write; or more than RING_ROWS runs passed
        unread): it is counted as lost.
        """
        ring = self._probes.ring
        if ring.keyed_by_step:
            keys, seqs = self._step_keys(settled)
            _, rows = self._ring_reads.rows(keys % RING_ROWS)
        else:
            keys = seqs = self._counter_keys(self.issued)
            count, rows = self._ring_reads.rows(keys % RING_ROWS)
            self.issued = max(self.issued, count)  # the graph's count also tells of runs made without this wrapper
        whole = rows[:, 0] == keys  # an absent row reads as NaN; an older lap's row has an older key
        if not whole.any():
            return np.empty((0, rows.shape[1] + (1 if ring.keyed_by_step else 0)))
        last = len(whole) - 1 - int(np.argmax(whole[::-1]))
        lost = int(seqs[last] - self._seq_done) - int(whole[: last + 1].sum())
        self._seq_done, self._key_done = int(seqs[last]), int(keys[last])
        if lost and self._collection is not None:
            self._collection.run.add_note(f"{lost} iteration(s) were not recorded: their rows were gone from the ring when it was read")
        keep = whole[: last + 1]
        if ring.keyed_by_step:  # the key is the step: the session's run numbers go before it
            return np.column_stack([seqs[: last + 1][keep], rows[: last + 1][keep]])
        return rows[: last + 1][keep]

    def step_written(self) -> None:
        """The script has just set the global step (every row before was read): later rows follow its new value."""
        if not self.closed and self._probes is not None and self._probes.ring.keyed_by_step:
            with self._draining:
                self._key_done = self._ring_reads.progress()

    def _counter_keys(self, through: int) -> np.ndarray:
        """The counter values (run numbers) after the last drained one up to `through`, at most RING_ROWS."""
        return np.arange(max(self._seq_done + 1, through - RING_ROWS + 1), max(through, self._seq_done) + 1, dtype=np.int64)

    def _step_keys(self, settled: bool) -> tuple[np.ndarray, np.ndarray]:
        """The global steps to read (the steps reached since the last drained one) and their run numbers.

        Every run of the train op adds one to the step, so the runs not yet drained
        bound how far back to look: that also covers the first drain, and a step the
        script set back (a checkpoint restored mid-run). They are counted *after* the
        step is read: a run that ends between the two is then counted (counted before,
        a run ending in between made the drain skip one row and number every later row
        one run early). That count may hold a run still in flight, which is exact enough
        to tell the last drained key is still behind the step; but taking the keys from
        the count alone (the first drain, a step set back) needs no run in flight
        (`settled`, the training thread's own drains). The reader thread's turn reads
        nothing then, and the training thread's next drain does.
        """
        step = self._ring_reads.progress()
        pending = max(self.issued - self._seq_done, 0)
        known = self._key_done is not None and step - pending <= self._key_done <= step
        if not known and not settled:  # the reader thread's turn: the training thread's next drain reads them
            return np.empty(0, np.int64), np.empty(0, np.int64)
        origin = self._key_done if known else step - pending
        keys = np.arange(max(origin, step - RING_ROWS) + 1, step + 1, dtype=np.int64)
        return keys, self._seq_done + keys - origin

    def _record(self, rows: np.ndarray, ids: np.ndarray) -> None:
        """Append the rows the collection in force wants, as one frame."""
        collection = self._collection
        if collection is None or not collection.active or not collection.training_trace or not len(rows):
            return
        keep = collection.trace_mask(ids)
        rows, ids = rows[keep], ids[keep]
        if not len(rows):
            return
        shape = self._probes.shape
        records = np.empty(len(rows), dtype=shape.dtype)
        records["run"] = self._base + rows[:, 0].astype(np.int64)
        records["step"] = rows[:, 1].astype(np.int64) if shape.has_step else NO_STEP
        records["times"] = rows[:, self._times_from:] * 1e6
        model = self._state.model_in(collection.run, self._graph, collection.may_capture_tasks, self._source)
        self._gate = collection.anomaly.gate(model.model_id) if collection.anomaly is not None else None
        collection.run.record_trace_frame(encode_frame(model.model_id, shape, records))
        collection.recorded(model.model_id, shape, ids, records["times"])
        collection.cycle_ended(ids)

    def _check_end(self, rows: np.ndarray) -> None:
        """The self-check's rows (`end_returns`); once it decides, its result in info.json and its warning once."""
        if self._end is None or not self._end.add_rows(rows[:, 0], rows[:, -1] * 1e6):
            return
        self._state.end_check = self._end.check.result
        collection = self._collection
        if collection is not None and collection.active:
            model = self._state.model_in(collection.run, self._graph, collection.may_capture_tasks, self._source)
            self._end.apply(collection.run, model, self._source)

    def _record_tasks(self, row: Any, run_metadata: RawRunMetadata, start: float, end: float) -> None:
        collection = self._collection
        if collection is None:
            return
        step = None
        seq = self.issued
        if row is not None:
            ring = self._probes.ring
            if ring.keyed_by_step:
                step = int(row[0])
            else:
                seq = int(row[0])
                step = int(row[1]) if ring.has_step else None
        if step is not None:
            self._step, self._seq_at_step = step, seq
            seen = self._state.steps
            if seen.first is None:
                seen.first = step
            seen.last = step
        model = self._state.model_in(collection.run, self._graph, True, self._source)
        collection.run.record_tasks(model, (self._base or 0) + seq, step, run_metadata.step_stats_bytes(), start * 1e6, end * 1e6)
        iteration_id = step if step is not None else (self._base or 0) + seq
        if collection.window is not None and collection.window.action(iteration_id) is ScheduleAction.RECORD_AND_SAVE:
            self.drain(wait=True)  # the cycle's step-trace rows go in before its reports are written
            collection.cycle_ended(np.array([iteration_id]))

    def abandon(self) -> None:
        """Stop recording at once, reading nothing more (profiling was turned off for this session)."""
        self.closed = True
        stop_reading(self)

    def close(self) -> None:
        """Drain what is left (the session is about to close); later runs are no longer recorded."""
        if not self.closed:
            self._guarded(lambda: self.drain(wait=True))
            self.closed = True
            stop_reading(self)


class _RingReads:
    """A drain's reads, as session callables: made once, they skip the fetch and feed handling
    `Session.run` does in Python on every call (most of a drain's cost otherwise)."""

    def __init__(self, make_callable: Callable[[Any], Callable[..., Any]], ring: RingOps) -> None:
        self._progress = make_callable(config_pb2.CallableOptions(fetch=[ring.progress.name]))
        self._rows = make_callable(config_pb2.CallableOptions(feed=[ring.slots.name], fetch=[ring.progress.name, ring.rows.name]))

    def progress(self) -> int:
        """The ring's progress now (the global step, or the counter)."""
        return int(self._progress()[0])

    def rows(self, slots: np.ndarray) -> tuple[int, np.ndarray]:
        """(the progress, the rows at `slots`), read in one run."""
        progress, rows = self._rows(slots)
        return int(progress), rows
