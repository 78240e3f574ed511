"""Reading a tf.function's ring eagerly, and recording its rows: one `FunctionModel` per training function.

A function takes no feeds, so its rows are not read by a run of the graph, as a
Session's are: the ring's tables are resource objects found by their shared
names (``ring.rows_table_name``), and an eager `LookupTableFindV2` on a handle
of the same name reads what the function wrote. The process's ring reader
(`ring_reader.read_in_the_background`) does it each DRAIN_INTERVAL_S, off the
training thread, and once more at exit; a row is written whole by one insert, so
a read sees a row or its absence, never half of one.

Every trace of one Python function (Keras traces `train_function` twice, a last
partial batch retraces) counts on one counter, so its rows are one sequence:
run numbers 1, 2, ... in step order, whichever trace ran the step. Traces may
differ in row width (one more data input...); each width has its own rows table
and shape, and the rows of a drain go out as one frame per shape.
"""
from __future__ import annotations

import dataclasses
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import tensorflow as tf

from npu_tf_profiling.config.notices import warn_user
from npu_tf_profiling.raw_format.layout import K_ITERATION_END_CHECK
from npu_tf_profiling.raw_format.training_frame import NO_STEP, RecordShape, encode_frame
from npu_tf_profiling.runtime.anomaly_watch import IntervalGate
from npu_tf_profiling.runtime.collection import Collection, CollectionSource
from npu_tf_profiling.runtime.end_check import EndCheck
from npu_tf_profiling.runtime.functions.call_ends import SILENT_CALLS, CallEnds, stop_watching
from npu_tf_profiling.runtime.functions.fed_batches import FedBatches
from npu_tf_profiling.runtime.functions.host_reads import HostBatches
from npu_tf_profiling.runtime.profiling_run import ModelEntry
from npu_tf_profiling.runtime.ring import RING_ROWS, counter_table_name, rows_table_name
from npu_tf_profiling.runtime.chosen_points import FALLBACK_KEY


CLOSE_WAIT_S = 30.0  # at exit, how long a drain under way is waited for (`drain`)
WAIT_S = 2.0  # how long a counted row not yet written, or a fed row without its caller's, is waited for
FED_REASON = "the graph reads no batch: GetNext is the read of {caller}, the function that calls this step, in the same call"
SILENT_NOTE = (
    "{name} ran {calls} calls and wrote no step-trace row: its row is written just before its iteration end "
    "{end}, and that op never ran (TensorFlow runs only what a function's outputs and stateful ops depend on). "
    "Its rows are timed at the calls' ends instead: Iteration Time, and GetNext where the batch is read before "
    "the call; FP and BP are N/A"
)
# A function that wrote no row: its rows carry the call's end only (and a GetNext pair from the host's reads).
CALL_END_SHAPE = RecordShape(get_next_pairs=0, has_fp=False, has_bp=False, reduce_pairs=0, has_step=False)


@dataclass
class _Trace:
    """One probed graph of the function: its record shape and the width of its rows table."""

    shape: RecordShape
    row_width: int
    handle: Any = None  # the rows table's eager handle, made on first read


@dataclass(eq=False)  # one object per function: the ring reader keeps it in a (weak) set
class FunctionModel:
    """One training function's recording: its traces, what has been read, and its model in each run."""

    key: str
    name: str
    tables: str
    trace_points: dict[str, Any]
    fallbacks: dict[str, Any]
    source: CollectionSource
    traces: list[_Trace] = field(default_factory=list)
    # Its calls' batches, for traces with no read in the graph: the host's eager reads (`host_reads`)
    # or the reads of the functions that call it (`feeders`, `fed_batches`); None: neither.
    host_batches: HostBatches | FedBatches | None = None
    feeders: list["FunctionModel"] = field(default_factory=list)  # the callers whose rows give this step its GetNext
    feeds: FedBatches | None = None  # set on a feeder: its rows go there, it has none of its own
    reads_in_loop: bool = False  # a feeder that is a branch reading inside its caller's loop (not the call's first read)
    # Its calls from Python (`call_ends`): after SILENT_CALLS with no row, `silent` holds why, and rows are timed at the calls.
    call_ends: CallEnds | None = None
    silent: str | None = None
    end_check: EndCheck | None = None  # its rows' Iteration End against the calls' host returns, while sampling
    slow_gate: IntervalGate | None = None  # anomaly_capture's look at each call's start (set once rows are recorded)
    closed: bool = False
    _done: int = 0  # the last run number read
    _collection: Collection | None = None
    _collection_from: int = 0  # runs after this one belong to the collection in force
    _counter: Any = None
    _waits: dict[int, float] = field(default_factory=dict)  # run -> when first seen counted but not written
    _models: dict[int, ModelEntry] = field(default_factory=dict)
    _runs: dict[int, Any] = field(default_factory=dict)  # the ProfilingRuns of `_models`, to update their info.json
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def add_trace(self, shape: RecordShape, row_width: int) -> None:
        with self._lock:
            if not any(t.row_width == row_width and t.shape == shape for t in self.traces):
                self.traces.append(_Trace(shape, row_width))

    def fed_by(self, feeder: "FunctionModel") -> None:
        """`feeder`'s rows (a caller reading the batch, `callers`) give this step's rows their GetNext."""
        with self._lock:
            if not self.feeders:
                self.host_batches = FedBatches(reason=FED_REASON.format(caller=feeder.name))
            if feeder not in self.feeders:
                self.feeders.append(feeder)
            feeder.feeds = self.host_batches

    # ----- what the process's ring reader calls ---------------------------------------------
    def read_in_background(self) -> None:
        self.drain()

    def close(self) -> None:
        """At exit: the last rows (no function runs any more)."""
        if not self.closed:
            self.drain(final=True)
            self.closed = True
            if self.silent is not None:  # said when it was found, and again where the job's last words are
                warn_user(f"npu_tf_profiling: at exit: {self.silent}")

    def drain(self, final: bool = False) -> None:
        """Read the rows written since the last drain and record them for the collection in force.

        The last (`final`, at exit) waits for a drain under way: on a loaded host the reader thread's last
        turn can outlast its join (5 s), and returning then lost the rows (and the self-check) it held."""
        if self.closed or not self._lock.acquire(blocking=final, timeout=CLOSE_WAIT_S if final else -1):
            return
        try:
            with tf.device("/cpu:0"):
                self._drain_locked(final)
        finally:
            self._lock.release()

    # ----- internals ---------------------------------------------------------------------------
    def _drain_locked(self, final: bool) -> None:
        calls = self.call_ends.count if self.call_ends is not None else 0  # before the counter: those calls are done
        if self.silent is not None:
            self._record_call_ends()
            return
        progress = self._progress()
        if progress == 0 and calls >= SILENT_CALLS and self.feeds is None and self._first_of_silent_models():
            self._fall_back_to_calls(calls)
            return
        if progress and self.call_ends is not None and not self.call_ends.stopped:  # rows come: the self-check's sample
            self._sample_returns()
            self._end_checked()
        # The batches of the rows read here are in the callers' rows; a reader writes its row before the
        # step it feeds runs, so after this step's progress was read, every batch of its rows up to it is there.
        for feeder in self.feeders:
            feeder.drain()
        collection = self.source.poll()
        if collection is not self._collection:
            self._collection, self._collection_from = collection, self._done
        if progress <= self._done:
            return
        keys = np.arange(max(self._done + 1, progress - RING_ROWS + 1), progress + 1, dtype=np.int64)
        found = np.zeros(len(keys), dtype=bool)
        newer = np.zeros(len(keys), dtype=bool)  # the slot holds a later row: this one was overwritten
        read = []
        for trace in self.traces:
            rows = self._rows(trace, keys)
            whole = rows[:, 0] == keys
            found |= whole
            newer |= rows[:, 0] > keys
            read.append((trace, rows[whole]))
        ready = progress if final else self._ready_through(keys, found | newer, read)
        if ready < keys[0]:
            return
        if ready < progress:
            progress = ready
            found, keys = found[keys <= progress], keys[keys <= progress]
            read = [(trace, rows[rows[:, 0] <= progress]) for trace, rows in read]
        for trace, rows in read:
            if len(rows):
                self._record(trace.shape, rows)
                if self.end_check is not None and not self.end_check.decided:
                    self.end_check.add_rows(rows[:, 0], rows[:, -1] * 1e6)
        self._end_checked()
        lost = len(keys) - int(found.sum()) + int(keys[0] - self._done - 1)
        self._done = progress
        if lost and collection is not None:
            collection.run.add_note(
                f"{lost} iteration(s) of {self.name} were not recorded: their rows were gone from the ring "
                f"({RING_ROWS} rows) when it was read"
            )
        if self.feeds is None:  # a feeder's calls are its step's iterations, counted there
            self.source.after_iteration(int(progress))

    def _sample_returns(self) -> None:
        """Its calls' host returns, for the self-check (`end_check`), until it has its sample: then (or when the
        calls are not this step's alone: another recording of them has rows) no more counting. A trace that
        never runs is no other recording: TensorFlow traces a step that creates variables (an optimizer's
        slots) twice, and only the second runs. Nor is a caller reading the batch for this step (`feeds`, a
        step that reads and calls an inner `tf.function` doing the updates): its calls are this step's, and
        the step's recording checks them."""
        if self.feeds is not None:
            return
        if any(m is not self and m.feeds is None and m._done for m in self.call_ends.models):
            stop_watching(self.call_ends)
            return
        if self.end_check is None:
            self.end_check = EndCheck(self.name, str(self.trace_points.get("iteration_end")))
        self.end_check.add_returns(self.call_ends.take())

    def _end_checked(self) -> None:
        """Once the self-check decided: no more counting, the result in info.json, and its warning once."""
        check = self.end_check
        if check is None or not check.decided or self.call_ends is None or self.call_ends.stopped:
            return
        stop_watching(self.call_ends)
        self.trace_points = dict(self.trace_points, **{K_ITERATION_END_CHECK: check.result})
        for key, entry in self._models.items():
            self._runs[key].note_model(entry, K_ITERATION_END_CHECK, check.result)
        if check.note is not None:
            self.source.note(check.note)

    def _first_of_silent_models(self) -> bool:
        """Whether this is the first recording of the calls it watches, and none of them wrote a row (`call_ends`;
        a caller that only reads the batch for its step, a feeder, writes rows that are not iterations)."""
        models = [m for m in self.call_ends.models if m.feeds is None] if self.call_ends is not None else []
        return bool(models) and models[0] is self and all(m._progress() == 0 for m in models[1:])

    def _fall_back_to_calls(self, calls: int) -> None:
        """No row after `calls` calls: say so (info.json, a warning now and at exit), and time the rows at the calls."""
        self.silent = SILENT_NOTE.format(name=self.name, calls=calls, end=self.trace_points.get("iteration_end"))
        self.trace_points = dict(self.trace_points, rows_timed_at_calls=self.silent)
        self.source.note(self.silent)
        self._record_call_ends()

    def _record_call_ends(self) -> None:
        ended = self.call_ends.take() if self.call_ends is not None else []
        if not ended:
            return
        collection = self.source.poll()
        if collection is not self._collection:
            self._collection, self._collection_from = collection, self._done
        rows = np.array(ended, dtype=np.float64)
        rows[:, 1] /= 1e6  # rows hold seconds, as the ring's
        self._record(CALL_END_SHAPE, rows)
        self._done = int(rows[-1, 0])
        self.source.after_iteration(self._done)

    def _ready_through(self, keys: np.ndarray, settled: np.ndarray, read: list) -> int:
        """The last run number whose rows may be recorded now: none after a run still waited for.

        A function's row takes its run number just before it is written (`ring`): a counted run
        whose row is not there yet (`settled` False) is being written, and later runs wait with it.
        A step fed by its caller waits for the caller's row (`fed_batches`). Each waits at most
        WAIT_S; then it goes as it is (a missing row is lost).
        """
        now = time.time()
        waiting = keys[~settled]
        self._waits = {k: t for k, t in self._waits.items() if k > self._done}
        held = [int(k) for k in waiting.tolist() if now - self._waits.setdefault(int(k), now) < WAIT_S]
        if isinstance(self.host_batches, FedBatches):
            for _, rows in read:
                if len(rows):
                    fed_wait = self.host_batches.waiting(np.nanmin(rows[:, 1:] * 1e6, axis=1), now * 1e6)
                    held += rows[fed_wait, 0].astype(np.int64).tolist()
        return min(held) - 1 if held else int(keys[-1])

    def _progress(self) -> int:
        if self._counter is None:
            self._counter = tf.raw_ops.MutableHashTableV2(
                key_dtype=tf.int64, value_dtype=tf.int64, shared_name=counter_table_name(self.tables), use_node_name_sharing=False
            )
        zero = tf.constant(0, tf.int64)
        return int(tf.raw_ops.LookupTableFindV2(table_handle=self._counter, keys=zero, default_value=zero))

    def _rows(self, trace: _Trace, keys: np.ndarray) -> np.ndarray:
        if trace.handle is None:
            trace.handle = tf.raw_ops.MutableHashTableOfTensorsV2(
                key_dtype=tf.int64, value_dtype=tf.float64, value_shape=[trace.row_width],
                shared_name=rows_table_name(self.tables, trace.row_width), use_node_name_sharing=False,
            )
        missing = tf.fill([trace.row_width], tf.constant(np.nan, tf.float64))
        found = tf.raw_ops.LookupTableFindV2(table_handle=trace.handle, keys=tf.constant(keys % RING_ROWS), default_value=missing)
        return found.numpy().reshape(len(keys), trace.row_width)

    def _record(self, shape: RecordShape, rows: np.ndarray) -> None:
        if self.feeds is not None:
            self._feed(shape, rows[:, 1:] * 1e6)
            return
        collection = self._collection
        if collection is None or not collection.active or not collection.training_trace:
            return
        runs = rows[:, 0].astype(np.int64)
        mine = runs > self._collection_from
        keep = mine & collection.trace_mask(runs)
        rows, runs = rows[keep], runs[keep]
        if not len(rows):
            return
        times = rows[:, 1:] * 1e6
        if shape.get_next_pairs == 0 and self.host_batches is not None:  # the batch was read before the call
            shape = dataclasses.replace(shape, get_next_pairs=1)
            times = np.column_stack([*self.host_batches.join(np.nanmin(times, axis=1)), times])
        records = np.empty(len(rows), dtype=shape.dtype)
        records["run"] = runs
        records["step"] = NO_STEP
        records["times"] = times
        model_id = self.entry_in(collection).model_id
        self.slow_gate = collection.anomaly.gate(model_id) if collection.anomaly is not None else None
        collection.run.record_trace_frame(encode_frame(model_id, shape, records))
        collection.recorded(model_id, shape, runs, times)
        collection.cycle_ended(runs)

    def _feed(self, shape: RecordShape, times: np.ndarray) -> None:
        """A feeder's rows, as its step's batches: the reads' span, and the call's end (its iteration end)."""
        pairs = times[:, : 2 * shape.get_next_pairs]
        if not pairs.shape[1]:
            return
        first, last = np.nanmin(pairs[:, 0::2], axis=1), np.nanmax(pairs[:, 1::2], axis=1)
        if self.reads_in_loop:
            self.feeds.add_reads(first, last)
        else:
            self.feeds.add_calls(first, last, times[:, -1])

    def entry_in(self, collection: Collection) -> ModelEntry:
        """This function's model in `collection`'s run (registered on first use)."""
        model = self._models.get(id(collection.run))
        if model is None:
            entry = dict(self.trace_points, function=self.name)
            if self.host_batches is not None:
                entry["get_next_from"] = self.host_batches.reason
            if self.fallbacks:
                entry[FALLBACK_KEY] = self.fallbacks
            # task_trace: the kernels' types are the profiler's own labels (profiler_capture), fused kernels as they ran;
            # an empty graph_ops file says so to the reports.
            op_types: dict[str, str] | None = {} if collection.may_capture_tasks else None
            model = self._models[id(collection.run)] = collection.run.register_model(self.key, entry, op_types)
            self._runs[id(collection.run)] = collection.run
        return model
