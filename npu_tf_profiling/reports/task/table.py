"""The per-task table of one device folder, joined to the step trace's iterations.

Columns of the task table (``TaskTable.frame``), one row per reported task,
sorted by Model ID, Iteration ID, start, track:

* Iteration ID joins the ``training_trace`` record of the same (model_id, run),
  so task_time uses exactly step_trace's Iteration ID (the global step when
  usable, else the run counter; see ``raw.assign_iteration_ids``). A record
  with no training_trace partner follows the same rule on the task records'
  own ``step``/``run`` (and is counted in ``TaskTable.unmatched_records``).
* Op Type: from ``data/graph_ops_<model_id>.json``; for a name missing there,
  parsed from the node's ``timeline_label`` (``name = Type(inputs)``, or the
  ``@@name:Type#`` form of GPU kernels); else ``unknown``.
* Task Type (``TASK_TYPES``): ``communication`` for collective op types
  (``Collective*``, ``Nccl*``, ``Horovod*``, ``Hcom*``); else ``GPU kernel``
  when the TensorFlow device string names a GPU, a ``/stream:`` or a
  ``/memcpy``; else ``host CPU`` when the same iteration also recorded a GPU
  device; else ``CPU``. Host CPU tasks are reported only when the run's
  ``aicpu`` option is ``on`` (CANN's "AI CPU ops"; the analogue here is
  host CPU ops when compute runs on an accelerator); otherwise they are left
  out and counted.
* Stream ID: the ``N`` of a ``/stream:N`` device, else the TensorFlow thread id.
* A track is one (TensorFlow device string, thread id) pair. Task Wait(us) is
  the idle gap on the task's track inside its iteration: start minus the
  latest end of the earlier-starting tasks of that track and iteration,
  floored at 0 (ops on one TensorFlow thread can overlap: async kernels, and
  TF 2.x records thread id 0 for every CPU op); 0 for the track's first task.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Union

import numpy as np
import pandas as pd

from npu_tf_profiling.raw_format import layout
from npu_tf_profiling.raw_format.run_info import RunInfo
from npu_tf_profiling.reports.step.records import ID_FROM_RUN, ID_FROM_STEP, TraceRead
from npu_tf_profiling.reports.task.classify import (
    PLUMBING_PREFIX,
    PROBE_PREFIX,
    SKIP_HOST_CPU,
    SKIP_PLUMBING,
    SKIP_PROBES,
    SKIP_STREAM_ALL,
    STREAM_DEVICE,
    TASK_COMMUNICATION,
    TASK_CPU,
    TASK_GPU,
    TASK_HOST_CPU,
    TASK_TYPES,
    UNKNOWN_OP_TYPE,
    aicpu_enabled,
    is_communication_type,
    is_gpu_device,
    short_device,
)
from npu_tf_profiling.reports.task.records import TaskTrace, read_graph_ops, read_task_trace


@dataclass(frozen=True)
class Track:
    """One timeline track: a TensorFlow device string and a thread id."""

    device: str
    thread: int
    label: str
    is_stream: bool


@dataclass
class TaskTable:
    """The reported tasks of one device folder (see the module doc for each column).

    ``frame`` columns: record, model_id, iteration_id, name, op_type, task_type,
    track (codes into ``names``/``op_types``/``TASK_TYPES``/``tracks``),
    stream_id, start_ns, end_ns, wait_ns; sorted by model, iteration, start, track.
    ``iterations`` has one row per record: record, model_id, run, step,
    iteration_id, run_start_us, run_end_us, iteration_end_us (from
    training_trace; NaN when unmatched), iteration_time_us (step trace's
    Iteration Time, else run_end - run_start; NaN when neither is known),
    n_tasks.
    """

    device_id: int
    frame: pd.DataFrame
    iterations: pd.DataFrame
    names: list[str]
    op_types: list[str]
    tracks: list[Track]
    skipped: dict[str, int]
    unmatched_records: int = 0
    skipped_records: int = 0

    def __len__(self) -> int:
        return len(self.frame)


def _track_label(device: str, thread: int, thread_names: dict[tuple[int, int], str], dcode: int, stream: bool) -> str:
    short = short_device(device)
    if stream:
        return short
    named = thread_names.get((dcode, thread))
    return f"{short} {named}" if named else f"{short} thread {thread}"


def _iteration_ids(records: pd.DataFrame, training: Optional[TraceRead]) -> tuple[pd.Series, pd.Series, int]:
    """Iteration ID and training_trace iteration_end of each record; and how many had no partner."""
    model = records[layout.K_MODEL_ID]
    ids = pd.Series(pd.NA, index=records.index, dtype="Int64")
    ends = pd.Series(np.nan, index=records.index, dtype="float64")
    unmatched = pd.Series(True, index=records.index)
    id_source: dict[int, str] = {}
    if training is not None and not training.frame.empty:
        tf = training.frame[[layout.K_MODEL_ID, layout.K_RUN, "iteration_id", layout.K_ITERATION_END]]
        tf = tf.drop_duplicates([layout.K_MODEL_ID, layout.K_RUN], keep="last")
        keys = records[[layout.K_MODEL_ID, layout.K_RUN]].astype({layout.K_RUN: "Int64"})
        joined = keys.merge(tf, how="left", on=[layout.K_MODEL_ID, layout.K_RUN])
        joined.index = records.index
        found = joined["iteration_id"].notna()
        ids[found] = joined.loc[found, "iteration_id"].astype("Int64")
        ends[found] = joined.loc[found, layout.K_ITERATION_END]
        unmatched = ~found
        id_source = dict(training.id_source)
    for model_id in pd.unique(model[unmatched]):
        rows = unmatched & (model == model_id)
        source = id_source.get(int(model_id))
        if source is None:
            # No training_trace for this model: apply raw.assign_iteration_ids' rule to the task records.
            all_rows = records[model == model_id].sort_values(layout.K_RUN)
            steps = all_rows[layout.K_STEP]
            source = ID_FROM_STEP if steps.notna().all() and steps.is_unique and steps.is_monotonic_increasing else ID_FROM_RUN
        steps = records.loc[rows, layout.K_STEP]
        runs = records.loc[rows, layout.K_RUN].astype("Int64")
        ids[rows] = steps.where(steps.notna(), runs) if source == ID_FROM_STEP else runs
    n_unmatched = int(unmatched.sum()) if training is not None else 0
    return ids, ends, n_unmatched


def build_task_table(
    trace: TaskTrace,
    device_id: int,
    training: Optional[TraceRead] = None,
    graph_ops: Optional[dict[int, dict[str, str]]] = None,
    iteration_times: Optional[pd.DataFrame] = None,
    keep_host_cpu: bool = True,
) -> TaskTable:
    """The reported tasks of one device (see the module doc for every rule).

    ``graph_ops`` maps model id -> {op name: op type}; ``iteration_times`` has
    columns model_id, iteration_id, iteration_time_us (the step trace's
    Iteration Time) and is used for op_summary's Ratio. The steps, each its
    own function: which nodes are tasks, their op types, their task types,
    their tracks, then the rows in report order.
    """
    records = trace.records.copy()
    ids, ends, unmatched = _iteration_ids(records, training)
    records["iteration_id"] = ids
    records["iteration_end_us"] = ends
    skipped: dict[str, int] = {}
    idx = np.flatnonzero(_task_nodes(trace, skipped))
    rec_model = records[layout.K_MODEL_ID].to_numpy(dtype=np.int64)
    nodes = _Nodes(trace.record[idx], trace.device[idx], trace.name[idx], trace.thread[idx], trace.start_ns[idx],
                   trace.end_ns[idx], rec_model[trace.record[idx]] if len(rec_model) else np.zeros(0, np.int64))
    op_type, op_types = _op_types(trace, nodes, graph_ops or {})
    task_type = _task_types(trace, nodes, op_type, op_types, records["has_gpu"].to_numpy(dtype=bool))
    if not keep_host_cpu:
        drop = task_type == TASK_TYPES.index(TASK_HOST_CPU)
        if drop.any():
            skipped[SKIP_HOST_CPU] = int(drop.sum())
            nodes, op_type, task_type = nodes.select(~drop), op_type[~drop], task_type[~drop]
    tracks, track, stream_of_track = _tracks(trace, nodes)
    rec, model, name, start, end = nodes.record, nodes.model, nodes.name, nodes.start, nodes.end

    # --- rows by Model ID, Iteration ID, start (then track), and Task Wait ---------------------
    n_rec = len(records)
    rec_iter = records["iteration_id"].to_numpy(dtype="float64", na_value=np.nan).astype(np.int64) if n_rec else np.zeros(0, np.int64)
    iteration = rec_iter[rec] if len(rec) else np.zeros(0, np.int64)
    order = _row_order(rec, start, track, rec_model, rec_iter, records["record"].to_numpy(dtype=np.int64), len(tracks))
    rec, model, iteration, name, op_type, task_type, track, start, end = (
        a[order] for a in (rec, model, iteration, name, op_type, task_type, track, start, end)
    )
    frame = pd.DataFrame(
        {
            "record": rec.astype(np.int64),
            "model_id": model,
            "iteration_id": iteration,
            "name": name,
            "op_type": op_type,
            "task_type": task_type,
            "track": track,
            "stream_id": stream_of_track[track] if len(track) else np.zeros(0, np.int64),
            "start_ns": start,
            "end_ns": end,
            "wait_ns": _task_wait(rec, track, start, end, len(tracks)),
        },
        copy=False,
    )

    records["n_tasks"] = np.bincount(rec, minlength=n_rec)[:n_rec].astype(np.int64) if n_rec else np.zeros(0, np.int64)
    records["iteration_time_us"] = _iteration_times(records, iteration_times)
    iterations = records[
        ["record", layout.K_MODEL_ID, layout.K_RUN, layout.K_STEP, "iteration_id", layout.K_RUN_START, layout.K_RUN_END,
         "iteration_end_us", "iteration_time_us", "n_tasks"]
    ]
    return TaskTable(
        device_id=device_id, frame=frame, iterations=iterations, names=list(trace.names), op_types=op_types,
        tracks=tracks, skipped=skipped, unmatched_records=unmatched, skipped_records=len(trace.skipped),
    )


@dataclass(frozen=True)
class _Nodes:
    """The task nodes' columns (one entry a node), in read order: record, device, name and thread codes, times, model."""

    record: np.ndarray
    device: np.ndarray
    name: np.ndarray
    thread: np.ndarray
    start: np.ndarray
    end: np.ndarray
    model: np.ndarray

    def select(self, keep: np.ndarray) -> "_Nodes":
        return _Nodes(*(column[keep] for column in (self.record, self.device, self.name, self.thread, self.start, self.end, self.model)))


def _task_nodes(trace: TaskTrace, skipped: dict[str, int]) -> np.ndarray:
    """Which nodes are tasks: not our plumbing or probes, and not a stream:all copy of per-stream records.

    Counts what is left out in ``skipped``.
    """
    names = trace.names
    n_names = len(names)
    plumbing = np.fromiter((n.startswith(PLUMBING_PREFIX) for n in names), dtype=bool, count=n_names)
    probes = np.fromiter((n.startswith(PROBE_PREFIX) for n in names), dtype=bool, count=n_names)
    node_plumbing = plumbing[trace.name] if n_names else np.zeros(0, bool)
    node_probe = probes[trace.name] if n_names else np.zeros(0, bool)
    keep = ~(node_plumbing | node_probe)
    skipped[SKIP_PLUMBING] = int(node_plumbing.sum())
    skipped[SKIP_PROBES] = int(node_probe.sum())
    stream_all = [i for i, d in enumerate(trace.devices) if d.endswith("/stream:all")]
    if stream_all:
        # Drop a record's stream:all device only when that record also has per-stream devices of the same GPU.
        per_stream = np.array([bool(STREAM_DEVICE.search(d)) and not d.endswith("/stream:all") for d in trace.devices])
        gpu_of = [d.rsplit("/stream:", 1)[0] if "/stream:" in d else d for d in trace.devices]
        pairs = pd.DataFrame({"record": trace.record, "device": trace.device}).drop_duplicates()
        pairs["gpu"] = [gpu_of[d] for d in pairs["device"]]
        pairs["per_stream"] = per_stream[pairs["device"].to_numpy()]
        has_streams = set(map(tuple, pairs.loc[pairs["per_stream"], ["record", "gpu"]].to_numpy().tolist()))
        drop_pairs = {
            (int(r), int(d)) for r, d, g in pairs[["record", "device", "gpu"]].itertuples(index=False)
            if int(d) in stream_all and (r, g) in has_streams
        }
        if drop_pairs:
            key = trace.record.astype(np.int64) * len(trace.devices) + trace.device
            drop_keys = np.array([r * len(trace.devices) + d for r, d in drop_pairs], dtype=np.int64)
            dropped = np.isin(key, drop_keys) & keep
            skipped[SKIP_STREAM_ALL] = int(dropped.sum())
            keep &= ~dropped
    return keep


def _op_types(trace: TaskTrace, nodes: _Nodes, graph_ops: dict[int, dict[str, str]]) -> tuple[np.ndarray, list[str]]:
    """Each node's op type code, and the types: graph_ops per model, else the label, else "unknown"."""
    type_codes: dict[str, int] = {}
    op_type = np.zeros(len(nodes.name), dtype=np.int32)
    for model_id in np.unique(nodes.model):
        in_model = nodes.model == model_id
        ops = graph_ops.get(int(model_id), {})
        used = np.unique(nodes.name[in_model])
        table = np.zeros(len(trace.names), dtype=np.int32)
        for code in used.tolist():
            t = ops.get(trace.names[code]) or trace.label_type(code) or UNKNOWN_OP_TYPE
            table[code] = type_codes.setdefault(t, len(type_codes))
        op_type[in_model] = table[nodes.name[in_model]]
    op_types = [""] * len(type_codes)
    for t, code in type_codes.items():
        op_types[code] = t
    return op_type, op_types


def _task_types(trace: TaskTrace, nodes: _Nodes, op_type: np.ndarray, op_types: list[str], rec_has_gpu: np.ndarray) -> np.ndarray:
    """Each node's task type (``TASK_TYPES`` index): GPU, host CPU of a GPU step, CPU, or communication."""
    dev_gpu = np.array([is_gpu_device(d) for d in trace.devices], dtype=bool)
    type_comm = np.array([is_communication_type(t) for t in op_types], dtype=bool)
    task_type = np.full(len(nodes.name), TASK_TYPES.index(TASK_CPU), dtype=np.int8)
    if len(nodes.name):
        on_gpu = dev_gpu[nodes.device]
        host = ~on_gpu & rec_has_gpu[nodes.record]
        task_type[on_gpu] = TASK_TYPES.index(TASK_GPU)
        task_type[host] = TASK_TYPES.index(TASK_HOST_CPU)
        comm = type_comm[op_type] if len(op_types) else np.zeros(len(nodes.name), bool)
        task_type[comm] = TASK_TYPES.index(TASK_COMMUNICATION)
    return task_type


def _tracks(trace: TaskTrace, nodes: _Nodes) -> tuple[list[Track], np.ndarray, np.ndarray]:
    """The tracks (one per device and thread), each node's track, and each track's stream id."""
    track_key = nodes.device.astype(np.int64) * (1 << 32) + (nodes.thread & 0xFFFFFFFF)
    uniq_keys, track = np.unique(track_key, return_inverse=True)
    tracks: list[Track] = []
    stream_of_track = np.zeros(len(uniq_keys), dtype=np.int64)
    for i, key in enumerate(uniq_keys.tolist()):
        dcode, tid = key >> 32, key & 0xFFFFFFFF
        device = trace.devices[dcode]
        match = STREAM_DEVICE.search(device)
        is_stream = bool(match) or "/memcpy" in device
        tracks.append(Track(device, tid, _track_label(device, tid, trace.thread_names, dcode, is_stream), is_stream))
        stream_of_track[i] = int(match.group(1)) if match else tid
    return tracks, track.astype(np.int32), stream_of_track


def _row_order(rec, start, track, rec_model, rec_iter, rec_index, n_tracks) -> np.ndarray:
    """Row order by (model, iteration, record, start, track), with one integer sort when the key fits.

    ``rec`` is non-decreasing (nodes are read record by record), so each
    record's earliest start comes from one ``minimum.reduceat``; start times
    relative to it, the record's rank and the track pack into one int64.
    """
    n = len(rec)
    if n == 0:
        return np.zeros(0, dtype=np.int64)
    rank = np.empty(len(rec_model), dtype=np.int64)
    rank[np.lexsort((rec_index, rec_iter, rec_model))] = np.arange(len(rec_model))
    if np.all(rec[1:] >= rec[:-1]):
        bounds = np.flatnonzero(np.r_[True, rec[1:] != rec[:-1]])
        rec_min = np.zeros(len(rec_model), dtype=np.int64)
        rec_min[rec[bounds]] = np.minimum.reduceat(start, bounds)
        rel = start - rec_min[rec]
        bits_rank = max(int(len(rec_model) - 1).bit_length(), 1)
        bits_rel = max(int(rel.max()).bit_length(), 1)
        bits_track = max(int(n_tracks - 1).bit_length(), 1)
        if bits_rank + bits_rel + bits_track <= 62:
            key = ((rank[rec] << bits_rel) | rel) << bits_track | track.astype(np.int64)
            return np.argsort(key, kind="stable")
    return np.lexsort((track, start, rank[rec]))


def _task_wait(rec: np.ndarray, track: np.ndarray, start: np.ndarray, end: np.ndarray, n_tracks: int) -> np.ndarray:
    """Idle gap before each task on its track within its record (see the module doc).

    Rows must be in start order within each (record, track): then the latest
    end before a row is the running maximum of ``end`` in its group, shifted by one.
    """
    if len(rec) == 0:
        return np.zeros(0, dtype=np.int64)
    group = rec.astype(np.int64) * max(n_tracks, 1) + track
    grouped = pd.Series(end, copy=False).groupby(group, sort=False)
    running_end = grouped.cummax()
    none = np.iinfo(np.int64).min  # int64 throughout: epoch ns do not fit a float64 exactly
    prev = running_end.groupby(group, sort=False).shift(1, fill_value=none).to_numpy(dtype=np.int64)
    first = prev == none
    return np.where(first, 0, np.maximum(start - np.where(first, 0, prev), 0))


def _iteration_times(records: pd.DataFrame, iteration_times: Optional[pd.DataFrame]) -> np.ndarray:
    fallback = (records[layout.K_RUN_END] - records[layout.K_RUN_START]).to_numpy(dtype="float64")
    if iteration_times is None or iteration_times.empty:
        return fallback
    table = iteration_times.drop_duplicates(["model_id", "iteration_id"], keep="last")
    joined = records[[layout.K_MODEL_ID, "iteration_id"]].merge(table, how="left", on=[layout.K_MODEL_ID, "iteration_id"])
    values = joined["iteration_time_us"].to_numpy(dtype="float64", na_value=np.nan)
    return np.where(np.isnan(values), fallback, values)


# ----- alignment with the step trace ----------------------------------------------------------------
def task_windows(table: TaskTable, tolerance_us: float = 1.0) -> pd.DataFrame:
    """Per task: its iteration's window and whether the task lies inside it.

    The window is [run_start_us, iteration_end_us] (the training_trace
    iteration end of the same iteration; run_end_us of the task record when
    the iteration has no training_trace record). ``inside`` allows
    ``tolerance_us`` on both sides: the step trace's timestamps come from
    ``tf.timestamp`` (float64 seconds, ~0.24 µs resolution at today's epoch),
    the tasks' from StepStats nanoseconds. Columns: record, model_id,
    iteration_id, name, start_us, end_us, window_start_us, window_end_us, inside.
    """
    it = table.iterations.set_index("record")
    frame = table.frame
    rec = frame["record"].to_numpy()
    wstart = it["run_start_us"].reindex(rec).to_numpy(dtype="float64")
    iend = it["iteration_end_us"].reindex(rec).to_numpy(dtype="float64")
    rend = it["run_end_us"].reindex(rec).to_numpy(dtype="float64")
    wend = np.where(np.isnan(iend), rend, iend)
    start_us = frame["start_ns"].to_numpy() / 1000.0
    end_us = frame["end_ns"].to_numpy() / 1000.0
    inside = (start_us >= wstart - tolerance_us) & (end_us <= wend + tolerance_us)
    return pd.DataFrame(
        {
            "record": rec,
            "model_id": frame["model_id"].to_numpy(),
            "iteration_id": frame["iteration_id"].to_numpy(),
            "name": [table.names[c] for c in frame["name"].to_numpy().tolist()],
            "start_us": start_us,
            "end_us": end_us,
            "window_start_us": wstart,
            "window_end_us": wend,
            "inside": inside,
        }
    )


def load_device_tasks(
    device_dir: Union[Path, str],
    device_id: int,
    info: RunInfo,
    training: Optional[TraceRead],
    iteration_times: Optional[pd.DataFrame] = None,
) -> Optional[TaskTable]:
    """Read and tabulate one device folder's task records; None when the folder has none."""
    paths = layout.task_trace_files(Path(device_dir))
    if not paths:
        return None
    trace = read_task_trace(paths, training.frame if training is not None else None)
    models = sorted(set(trace.records[layout.K_MODEL_ID].tolist()))
    graph_ops = {m: read_graph_ops(device_dir, m) for m in models}
    return build_task_table(trace, device_id, training, graph_ops, iteration_times, keep_host_cpu=aicpu_enabled(info))
