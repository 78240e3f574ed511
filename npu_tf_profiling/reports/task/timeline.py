"""``msprof_<ts>.json``: one Chrome-trace timeline with the step trace and the tasks.

Layout (Chrome trace format, see ``chrome_trace``):

* one process per device: ``pid`` = device id, named ``Device <id>`` (shared
  with the step-trace tracks of ``step_trace_timeline``, which come first);
* the step trace's tracks as in ``step_trace_<ts>.json``;
* then one track per TensorFlow (device string, thread id) pair, named
  ``CPU:0 thread 0`` (``GPU:0/stream:7`` for a GPU stream), sorted after the
  step trace. Task events are ``X`` events named after the op, category
  ``Task``, with args Op Type, Task Type, Model ID, Iteration ID.
  Ops on one TensorFlow thread can overlap (TF 2.x records thread 0 for
  every CPU op, and inter-op parallelism runs several at once); no track may
  hold overlapping ``X`` events, so such a track is spread over lanes named
  ``... #2``, ``... #3`` (greedy, lowest free lane: the fewest lanes).

Times: ``ts``/``dur`` are µs since the Unix epoch, the step trace's clock.
JSON numbers are doubles (in every viewer), which at today's epoch resolve
about 0.25 µs; the writer rounds each task's start and end to the nearest
double and writes ``dur`` = end − start in that space, so touching tasks
still touch and no rounding creates an overlap. The exact nanosecond values
are in ``task_time_<ts>.csv``.

Size budget: viewers choke on big JSON (Chrome tracing fails above roughly
256-800 MB), so the events are written into CANN's slices
``msprof_slice_0_<ts>.json``, ``msprof_slice_1_<ts>.json``... (the names and
the 200 MiB default of ``encoders.trace_slices``) of at most ``budget_bytes``
each when one file would be larger. Each file is a complete trace (its own
process/thread-name metadata). Unlike the step-trace timeline, whose slices
hold whole iterations of every track, this one streams: events arrive device
by device (each device's task table is built, written and dropped in turn), so
a slice holds a stretch of one device's tasks. The step
trace's spans are written first, then each device's tasks in time order, so a
part holds whole devices' stretches, not a time range across devices. Nothing is dropped: the writer returns how many events went where, and
the report prints a line when it split.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np
import pandas as pd

from npu_tf_profiling.raw_format import own_files
from npu_tf_profiling.reports.encoders import chrome_trace
from npu_tf_profiling.reports.encoders.trace_slices import DEFAULT_SLICE_BYTES, MIN_SLICE_BYTES, SliceFiles
from npu_tf_profiling.reports.task.classify import TASK_TYPES
from npu_tf_profiling.reports.task.table import TaskTable

MSPROF_STEM = "msprof"
DEFAULT_BUDGET_BYTES = DEFAULT_SLICE_BYTES
TASK_CATEGORY = "Task"
# Task events formatted per batch (bounds the memory held while writing millions of events).
EVENT_BATCH = 100_000
# Bytes kept free in each file for the closing metadata beyond what is known (safety margin).
_RESERVE_MARGIN = 4096


def _encode(event: dict[str, Any]) -> str:
    return json.dumps(event, ensure_ascii=True, allow_nan=False, separators=(",", ":"))


@dataclass
class TimelineParts:
    """What the writer produced: the files and how many span events each holds."""

    paths: list[Path] = field(default_factory=list)
    events: list[int] = field(default_factory=list)
    budget_bytes: int = DEFAULT_BUDGET_BYTES

    @property
    def split(self) -> bool:
        return len(self.paths) > 1

    @property
    def total_events(self) -> int:
        return sum(self.events)


class SplitTimelineWriter:
    """Writes span events into one or more JSON array files under a byte budget.

    Metadata events (process/thread names) are registered per (pid, tid) and
    each file gets, at its end, the metadata of the tracks it holds events for
    (array order does not matter in the trace format). Events must be ASCII
    JSON (``ensure_ascii``), so string length is byte length.
    """

    def __init__(self, out_dir: Path, timestamp: str, budget_bytes: int = DEFAULT_BUDGET_BYTES) -> None:
        if budget_bytes < MIN_SLICE_BYTES:
            raise ValueError(f"timeline budget {budget_bytes} bytes is too small (minimum {MIN_SLICE_BYTES} bytes)")
        self.out_dir = Path(out_dir)
        self.timestamp = timestamp
        self.budget = budget_bytes
        self._process_meta: dict[int, list[str]] = {}
        self._thread_meta: dict[tuple[int, int], list[str]] = {}
        self._meta_bytes = 0
        self._files = SliceFiles(self.out_dir, f"{MSPROF_STEM}_{timestamp}.json", MSPROF_STEM, timestamp, encoding="ascii")
        self._counts: list[int] = []
        self._handle: Any = None
        self._used = 0
        self._pids: set[int] = set()
        self._tracks: set[tuple[int, int]] = set()
        own_files.make_dir(self.out_dir)

    # ----- metadata ---------------------------------------------------------------------------
    def add_process(self, pid: int, events: Sequence[dict[str, Any]]) -> None:
        encoded = [_encode(e) for e in events]
        self._process_meta.setdefault(pid, []).extend(encoded)
        self._meta_bytes += sum(len(e) + 1 for e in encoded)

    def add_thread(self, pid: int, tid: int, events: Sequence[dict[str, Any]]) -> None:
        encoded = [_encode(e) for e in events]
        self._thread_meta.setdefault((pid, tid), []).extend(encoded)
        self._meta_bytes += sum(len(e) + 1 for e in encoded)

    def has_process(self, pid: int) -> bool:
        return pid in self._process_meta

    # ----- files ------------------------------------------------------------------------------
    def _open(self) -> None:
        self._handle = self._files.new_part()
        self._counts.append(0)
        self._handle.write("[")
        self._used = 1
        self._pids = set()
        self._tracks = set()

    def _close(self) -> None:
        meta: list[str] = []
        for pid in sorted(self._pids):
            meta.extend(self._process_meta.get(pid, []))
        for key in sorted(self._tracks):
            meta.extend(self._thread_meta.get(key, []))
        if meta:
            self._handle.write(("," if self._counts[-1] else "") + ",".join(meta))
        self._handle.write("]\n")
        self._handle = None  # the part is flushed, fsync'ed and closed when committed in `finish`

    def write(self, events: Sequence[str], pids: np.ndarray, tids: np.ndarray) -> None:
        """Append encoded span events; ``pids``/``tids`` give each event's track."""
        start = 0
        n = len(events)
        if n == 0:
            return
        sizes = np.fromiter(map(len, events), dtype=np.int64, count=n) + 1
        cum = np.cumsum(sizes)
        while start < n:
            if self._handle is None:
                self._open()
            room = self.budget - self._used - self._meta_bytes - _RESERVE_MARGIN
            base = cum[start - 1] if start else 0
            fit = int(np.searchsorted(cum, base + room, side="right")) - start
            if fit <= 0:
                if self._counts[-1]:
                    self._close()
                    continue
                fit = 1  # one event larger than the budget still goes somewhere: never dropped
            stop = min(n, start + fit)
            text = ",".join(events[start:stop])
            self._handle.write(("," if self._counts[-1] else "") + text)
            self._used += len(text) + 1
            self._counts[-1] += stop - start
            keys = np.unique(np.asarray(pids[start:stop], dtype=np.int64) * (1 << 32) + np.asarray(tids[start:stop], dtype=np.int64))
            for key in keys.tolist():
                pid, tid = divmod(key, 1 << 32)
                self._pids.add(pid)
                self._tracks.add((pid, tid))
            start = stop
            if start < n:
                self._close()

    def finish(self) -> TimelineParts:
        """Close the last file and move the files into place (removing stale parts of this <ts>)."""
        if self._handle is None and not len(self._files):
            self._open()
        if self._handle is not None:
            self._close()
        earlier = [p for p in self.out_dir.glob(f"{MSPROF_STEM}_{self.timestamp}_*.json") if _is_earlier_part(p.name, self.timestamp)]
        finals = self._files.commit(also_stale=earlier)
        return TimelineParts(paths=finals, events=list(self._counts), budget_bytes=self.budget)

    def abort(self) -> None:
        self._handle = None
        self._files.abort()


def _is_earlier_part(name: str, timestamp: str) -> bool:
    """``msprof_<ts>_<n>.json``: a part as versions before CANN's slice names wrote it (stale once rewritten)."""
    stem = f"{MSPROF_STEM}_{timestamp}_"
    return name.startswith(stem) and name.endswith(".json") and name[len(stem):-5].isdigit()


# ----- step trace events ---------------------------------------------------------------------------
def add_step_trace(writer: SplitTimelineWriter, events: Sequence[dict[str, Any]]) -> dict[int, int]:
    """Register the step trace's metadata and write its spans; returns the highest tid used per pid."""
    max_tid: dict[int, int] = {}
    spans: list[str] = []
    pids: list[int] = []
    tids: list[int] = []
    for event in events:
        pid, tid = event["pid"], event.get("tid", 0)
        max_tid[pid] = max(max_tid.get(pid, 0), tid)
        if event.get("ph") == "M":
            if event.get("name", "").startswith("process_"):
                writer.add_process(pid, [event])
            else:
                writer.add_thread(pid, tid, [event])
            continue
        spans.append(_encode(event))
        pids.append(pid)
        tids.append(tid)
    writer.write(spans, np.array(pids, dtype=np.int64), np.array(tids, dtype=np.int64))
    return max_tid


# ----- task events ---------------------------------------------------------------------------------
def ns_to_us(ns: np.ndarray) -> np.ndarray:
    """Epoch ns -> the nearest double in µs (whole µs are exact in float64; one rounding, not two)."""
    return (ns // 1000).astype(np.float64) + (ns % 1000) / 1000.0


def task_lanes(track: np.ndarray, ts: np.ndarray, end: np.ndarray) -> np.ndarray:
    """The lane of each task on its track so that no lane holds overlapping spans (float µs space).

    Vectorised check first; the greedy loop (lowest free lane, in start
    order) runs only on tracks that do overlap.
    """
    lanes = np.zeros(len(track), dtype=np.int64)
    if len(track) == 0:
        return lanes
    # The task table is in start order per record: a stable sort by track alone (radix on small
    # ints) usually leaves each track in start order; if not, sort by (track, start, end).
    small = track.astype(np.int16) if len(track) and int(track.max()) < 2**15 else track
    order = np.argsort(small, kind="stable")
    t_sorted, ts_sorted = track[order], ts[order]
    first = np.ones(len(order), dtype=bool)
    first[1:] = t_sorted[1:] != t_sorted[:-1]
    if np.any(~first[1:] & (ts_sorted[1:] < ts_sorted[:-1])):
        order = np.lexsort((end, ts, track))
        t_sorted, ts_sorted = track[order], ts[order]
        first[1:] = t_sorted[1:] != t_sorted[:-1]
    end_sorted = end[order]
    group = np.cumsum(first) - 1
    running = pd.Series(end_sorted).groupby(group).cummax().to_numpy()
    prev = np.empty_like(running)
    prev[0] = -np.inf
    prev[1:] = running[:-1]
    overlap = ~first & (ts_sorted < prev)
    if not overlap.any():
        return lanes
    bad_groups = np.unique(group[overlap])
    bounds = np.flatnonzero(first).tolist() + [len(order)]
    sorted_lanes = np.zeros(len(order), dtype=np.int64)
    for g in bad_groups.tolist():
        lo, hi = bounds[g], bounds[g + 1]
        sorted_lanes[lo:hi] = chrome_trace.lanes_of_sorted(ts_sorted[lo:hi].tolist(), end_sorted[lo:hi].tolist())
    lanes[order] = sorted_lanes
    return lanes


def add_tasks(writer: SplitTimelineWriter, table: TaskTable, first_tid: int, batch: int = EVENT_BATCH) -> int:
    """Register the device's task tracks and write its task events; returns the number of events."""
    pid = table.device_id
    frame = table.frame
    if frame.empty:
        return 0
    start_ns = frame["start_ns"].to_numpy()
    end_ns = frame["end_ns"].to_numpy()
    ts = ns_to_us(start_ns)
    end = ns_to_us(end_ns)
    track = frame["track"].to_numpy()
    lanes = task_lanes(track, ts, end)
    # tid per (track, lane), tracks in order, their lanes after them.
    n_lanes = int(lanes.max()) + 1
    key = track.astype(np.int64) * n_lanes + lanes
    used, tid_index = np.unique(key, return_inverse=True)
    tids = (first_tid + tid_index).astype(np.int64)
    for i, k in enumerate(used.tolist()):
        trk, lane = divmod(k, n_lanes)
        label = table.tracks[trk].label
        name = label if lane == 0 else f"{label} #{lane + 1}"
        tid = first_tid + i
        writer.add_thread(pid, tid, [chrome_trace.thread_name_event(pid, tid, name), chrome_trace.thread_sort_event(pid, tid, tid)])

    # Everything but the times, the lane and the iteration is fixed per (name, op type, task type,
    # model): encode that once per combination, not once per event.
    name = frame["name"].to_numpy().astype(np.int64)
    op_type = frame["op_type"].to_numpy().astype(np.int64)
    task_type = frame["task_type"].to_numpy().astype(np.int64)
    model = frame["model_id"].to_numpy().astype(np.int64)
    combo_key = ((model * (len(table.op_types) + 1) + op_type) * len(TASK_TYPES) + task_type) * (len(table.names) + 1) + name
    combos, combo = np.unique(combo_key, return_inverse=True)
    first = np.zeros(len(combos), dtype=np.int64)
    first[combo] = np.arange(len(combo))  # any row of each combination: they agree on these fields
    cat = json.dumps(TASK_CATEGORY)
    type_json = [json.dumps(t, ensure_ascii=True) for t in table.op_types]
    task_type_json = [json.dumps(t) for t in TASK_TYPES]
    names = table.names
    prefix = [
        f'{{"name":{json.dumps(names[nm], ensure_ascii=True)},"ph":"X","cat":{cat},"pid":{pid},'
        f'"args":{{"Op Type":{type_json[ot]},"Task Type":{task_type_json[tt]},"Model ID":{m},"Iteration ID":'
        for nm, ot, tt, m in zip(name[first].tolist(), op_type[first].tolist(), task_type[first].tolist(), model[first].tolist())
    ]
    iteration = frame["iteration_id"].to_numpy()
    n = len(frame)
    for lo in range(0, n, batch):
        hi = min(n, lo + batch)
        rows = zip(combo[lo:hi].tolist(), iteration[lo:hi].tolist(), ts[lo:hi].tolist(), (end[lo:hi] - ts[lo:hi]).tolist(), tids[lo:hi].tolist())
        events = [f'{prefix[k]}{it}}},"ts":{t!r},"dur":{d!r},"tid":{tid}}}' for k, it, t, d, tid in rows]
        writer.write(events, np.full(hi - lo, pid, dtype=np.int64), tids[lo:hi])
    return n


def process_events(device_id: int) -> list[dict[str, Any]]:
    return [chrome_trace.process_name_event(device_id, f"Device {device_id}"), chrome_trace.process_sort_event(device_id, device_id)]
