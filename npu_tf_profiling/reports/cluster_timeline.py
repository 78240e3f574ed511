"""``cluster_timeline.json``: every rank's step trace (and tasks) on one clock, one process per rank.

Layout (Chrome trace format, see ``chrome_trace``): ``pid`` = rank, named
``Rank <r> (<host>, pid <p>)``, sorted by rank; inside, the step-trace tracks
of ``step_trace_timeline`` (Iteration, Phases, GetNext, Reduce per Model ID),
then whatever the registered *rank sources* add (the tasks, when a rank has
``task_trace.bin``). Sources are pluggable: ``RANK_SOURCES`` holds callables
``(rank_data, table_rows, first_tid, shift_us) -> (events, notes)``; a later
kind of per-rank data registers one without touching the rest.

One clock: ranks on one host share its clock and are left as they are. Ranks
on several hosts (info.json ``host``; clocks that may differ by milliseconds) are shifted onto
the lowest rank's clock by the median over common steps of the difference of
their last all-reduce end (a synchronous all-reduce completes at about the
same moment everywhere), or of Iteration End without Reduce data; ``--align
none`` keeps the raw clocks, ``--align reduce`` forces the shift. The shifts
used are written in each process's label and returned.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Optional

import numpy as np
import pandas as pd

from npu_tf_profiling.reports import chrome_trace
from npu_tf_profiling.reports import step_trace as st
from npu_tf_profiling.reports.cluster_data import ClusterData, RankData
from npu_tf_profiling.reports.step_trace_timeline import step_trace_events

JSON_NAME = "cluster_timeline.json"
ALIGN_AUTO = "auto"
ALIGN_NONE = "none"
ALIGN_REDUCE = "reduce"
ALIGN_CHOICES = (ALIGN_AUTO, ALIGN_NONE, ALIGN_REDUCE)

RankSource = Callable[[RankData, pd.DataFrame, int, float], tuple[list[chrome_trace.Event], list[str]]]


@dataclass
class ClockAlignment:
    mode: str  # "none" (one host, or asked), else what was lined up: "the last all-reduce end" / "Iteration End"
    shifts_us: dict[int, float] = field(default_factory=dict)  # added to each rank's times
    reason: str = ""


def _sync_points(table: st.StepTraceTable) -> tuple[pd.DataFrame, str]:
    """Per (rank, model, step): the moment all ranks share (last Reduce end, else Iteration End)."""
    frame = table.frame
    if table.n_reduce:
        ends = np.column_stack(
            [(table.reduce_start(k) + table.reduce_duration(k)).astype("float64").to_numpy(na_value=np.nan) for k in range(table.n_reduce)]
        )
        with np.errstate(invalid="ignore"):
            last = np.where(np.isnan(ends).all(axis=1), np.nan, np.nanmax(np.where(np.isnan(ends), -np.inf, ends), axis=1))
        if not np.isnan(last).all():
            return pd.DataFrame({"rank": frame[st.DEVICE_ID].astype(int), "model": frame[st.MODEL_ID].astype(int),
                                 "step": frame[st.ITERATION_ID_COL].astype(int), "t": last}), "the last all-reduce end"
    t = frame[st.ITERATION_END].astype("float64").to_numpy(na_value=np.nan)
    return pd.DataFrame({"rank": frame[st.DEVICE_ID].astype(int), "model": frame[st.MODEL_ID].astype(int),
                         "step": frame[st.ITERATION_ID_COL].astype(int), "t": t}), "Iteration End"


def align_clocks(data: ClusterData, mode: str = ALIGN_AUTO) -> ClockAlignment:
    ranks = data.rank_ids
    if mode == ALIGN_NONE:
        return ClockAlignment("none", {r: 0.0 for r in ranks}, "asked for raw clocks")
    if mode == ALIGN_AUTO and len(data.hosts) <= 1:
        why = "all ranks on one host: one clock" if data.hosts else "hosts unknown (no info.json host): raw clocks"
        return ClockAlignment("none", {r: 0.0 for r in ranks}, why)
    points, what = _sync_points(data.table)
    wide = points.pivot_table(index=["model", "step"], columns="rank", values="t", aggfunc="first")
    ref = ranks[0]
    shifts: dict[int, float] = {}
    for rank in ranks:
        if rank == ref or rank not in wide.columns:
            shifts[rank] = 0.0
            continue
        diff = (wide[ref] - wide[rank]).dropna()
        shifts[rank] = float(np.round(diff.median())) if len(diff) else 0.0
    return ClockAlignment(what, shifts, f"ranks on {len(data.hosts) or 'unknown'} host(s): shifted onto rank {ref}'s clock by the median difference of {what} over common steps")


def _shifted(table: st.StepTraceTable, shifts: dict[int, float]) -> st.StepTraceTable:
    if not any(shifts.values()):
        return table
    frame = table.frame.copy()
    shift = frame[st.DEVICE_ID].map(lambda r: int(shifts.get(int(r), 0.0))).astype("Int64")
    time_cols = [st.FP_START, st.BP_END, st.ITERATION_END, st.GETNEXT_START, st.GETNEXT_END]
    time_cols += [st.reduce_start_key(k) for k in range(table.n_reduce)]
    for col in time_cols:
        frame[col] = frame[col] + shift
    return st.StepTraceTable(frame=frame, n_reduce=table.n_reduce, has_previous=table.has_previous)


def task_source(rank: RankData, rows: pd.DataFrame, first_tid: int, shift_us: float) -> tuple[list[chrome_trace.Event], list[str]]:
    """The rank's tasks (task_trace), one track per TensorFlow device/thread, after its step-trace tracks."""
    from npu_tf_profiling import layout

    if not (rank.device_dir / layout.DATA_DIR / layout.TASK_TRACE_FILE).is_file():
        return [], []
    try:
        from npu_tf_profiling.reports.msprof_timeline import lanes_of_sorted, ns_to_us
        from npu_tf_profiling.reports.task_trace import load_device_tasks
    except ImportError as exc:  # the task reader is optional for the cluster view
        return [], [f"rank {rank.rank}: tasks left out of the timeline ({exc})"]
    table = load_device_tasks(rank.device_dir, rank.rank, rank.info, rank.trace)
    if table is None or table.frame.empty:
        return [], []
    frame = table.frame.sort_values(["track", "start_ns"], kind="mergesort")
    ts = ns_to_us(frame["start_ns"].to_numpy()) + shift_us
    end = ns_to_us(frame["end_ns"].to_numpy()) + shift_us
    tracks = frame["track"].to_numpy()
    names, op_types = table.names, table.op_types
    events: list[chrome_trace.Event] = []
    tid = first_tid
    for trk in np.unique(tracks).tolist():
        sel = np.flatnonzero(tracks == trk)
        lanes = lanes_of_sorted(ts[sel].tolist(), end[sel].tolist())
        base = tid
        for lane in range(max(lanes) + 1 if lanes else 0):
            label = table.tracks[trk].label
            events.append(chrome_trace.thread_name_event(rank.rank, base + lane, label if lane == 0 else f"{label} #{lane + 1}"))
            events.append(chrome_trace.thread_sort_event(rank.rank, base + lane, base + lane))
        sub = frame.iloc[sel]
        for i, lane, name_code, type_code, model, it in zip(
            sel.tolist(), lanes, sub["name"].tolist(), sub["op_type"].tolist(), sub["model_id"].tolist(), sub["iteration_id"].tolist()
        ):
            events.append({"name": names[name_code], "ph": "X", "cat": "Task", "ts": float(ts[i]), "dur": float(end[i] - ts[i]),
                           "pid": rank.rank, "tid": base + lane,
                           "args": {"Op Type": op_types[type_code], "Model ID": int(model), "Iteration ID": None if pd.isna(it) else int(it)}})
        tid = base + (max(lanes) + 1 if lanes else 0)
    return events, []


RANK_SOURCES: list[RankSource] = [task_source]


def cluster_timeline_events(data: ClusterData, alignment: ClockAlignment, with_tasks: bool = True) -> tuple[list[chrome_trace.Event], list[str]]:
    """All events of the merged timeline, and notes on anything left out."""
    table = _shifted(data.table, alignment.shifts_us)
    events = step_trace_events(table)
    by_rank = {r.rank: r for r in data.ranks}
    notes: list[str] = []
    out: list[chrome_trace.Event] = []
    next_tid: dict[int, int] = {}
    for event in events:
        pid = event.get("pid")
        if event.get("ph") == "M" and event.get("name") == "process_name" and pid in by_rank:
            rank = by_rank[pid]
            where = ", ".join(x for x in (rank.host, f"pid {rank.pid}" if rank.pid is not None else None) if x)
            label = f"Rank {pid}" + (f" ({where})" if where else "")
            event = chrome_trace.process_name_event(pid, label)
            shift = alignment.shifts_us.get(pid, 0.0)
            if shift:
                out.append({"name": "process_labels", "ph": "M", "pid": pid, "tid": 0, "args": {"labels": f"clock shifted by {shift:+.0f} us"}})
        if isinstance(event.get("tid"), int) and pid is not None:
            next_tid[pid] = max(next_tid.get(pid, 0), event["tid"] + 1)
        out.append(event)
    if with_tasks:
        for rank in data.ranks:
            for source in RANK_SOURCES:
                try:
                    extra, source_notes = source(rank, data.table.frame, next_tid.get(rank.rank, 1), alignment.shifts_us.get(rank.rank, 0.0))
                except Exception as exc:  # noqa: BLE001 - one rank's extra data must not sink the cluster view
                    extra, source_notes = [], [f"rank {rank.rank}: {getattr(source, '__name__', 'a source')} failed ({exc!r}); left out"]
                out.extend(extra)
                notes.extend(source_notes)
                tids = [e["tid"] for e in extra if isinstance(e.get("tid"), int)]
                if tids:
                    next_tid[rank.rank] = max(tids) + 1
    return out, notes
