"""``cluster_timeline.json``: every rank's step trace (and tasks) on one clock, one process per rank.

Layout (Chrome trace format, see ``chrome_trace``): ``pid`` = rank, named
``Rank <r> (<host>, pid <p>)``, sorted by rank; inside, the step-trace tracks
of ``step_trace_timeline`` (Iteration, Phases, GetNext, Reduce per Model ID;
the same events as ``step_trace_events``, written straight to JSON text for
speed), then whatever the registered *rank sources* add (the tasks, when a rank has
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

import json
import warnings
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
import pandas as pd

from npu_tf_profiling.reports.encoders import chrome_trace
from npu_tf_profiling.reports.step import table as st
from npu_tf_profiling.reports.cluster.data import ClusterData, RankData, sync_points
from npu_tf_profiling.reports.errors import RawDataWarning
from npu_tf_profiling.reports.step.timeline import (
    TRACK_GETNEXT,
    TRACK_ITERATION,
    TRACK_PHASES,
    TRACK_REDUCE,
    model_track_name,
)

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


def sync_frame(rank: np.ndarray, model: np.ndarray, step: np.ndarray, reduce_end: np.ndarray, end: np.ndarray) -> pd.DataFrame:
    """Per (rank, model, step) row: the last all-reduce end (NaN without one) and Iteration End, µs."""
    return pd.DataFrame({"rank": rank.astype("int64"), "model": model.astype("int64"), "step": step.astype("int64"),
                         "reduce": reduce_end, "end": end})


def table_sync_frame(table: st.StepTraceTable) -> pd.DataFrame:
    """``sync_frame`` of a step-trace table (the per-rank tasks compute the same columns rank by rank)."""
    reduce_end, end = sync_points(table)
    frame = table.frame
    return sync_frame(frame[st.DEVICE_ID].astype("int64").to_numpy(), frame[st.MODEL_ID].astype("int64").to_numpy(),
                      frame[st.ITERATION_ID_COL].astype("int64").to_numpy(), reduce_end, end)


def align_clocks(data: ClusterData, mode: str = ALIGN_AUTO) -> ClockAlignment:
    """``align_points`` of a loaded cluster."""
    return align_points(data.rank_ids, data.hosts, lambda: table_sync_frame(data.table), mode)


def align_points(ranks: list[int], hosts: list[str], points: Callable[[], pd.DataFrame], mode: str = ALIGN_AUTO) -> ClockAlignment:
    """Each rank's clock shift (see the module docstring); ``points`` gives the ``sync_frame`` when one is needed.

    The moment lined up is the last all-reduce end when any rank has one, else
    Iteration End; each rank's shift is the median over the steps it shares
    with the lowest rank of the difference (the first value of a repeated step).
    """
    if mode == ALIGN_NONE:
        return ClockAlignment("none", {r: 0.0 for r in ranks}, "asked for raw clocks")
    if mode == ALIGN_AUTO and len(hosts) <= 1:
        why = "all ranks on one host: one clock" if hosts else "hosts unknown (no info.json host): raw clocks"
        return ClockAlignment("none", {r: 0.0 for r in ranks}, why)
    frame = points()
    column, what = ("reduce", "the last all-reduce end") if frame["reduce"].notna().any() else ("end", "Iteration End")
    firsts = frame.groupby(["rank", "model", "step"], sort=False)[column].first().dropna()
    ref = ranks[0]
    wide = firsts.reset_index()
    ref_t = wide[wide["rank"] == ref].set_index(["model", "step"])[column]
    wide["ref"] = ref_t.reindex(pd.MultiIndex.from_frame(wide[["model", "step"]])).to_numpy()
    wide["diff"] = wide["ref"] - wide[column]
    medians = wide.dropna(subset=["diff"]).groupby("rank")["diff"].median()
    shifts = {r: 0.0 if r == ref or r not in medians.index else float(np.round(medians[r])) for r in ranks}
    return ClockAlignment(what, shifts, f"ranks on {len(hosts) or 'unknown'} host(s): shifted onto rank {ref}'s clock by the median difference of {what} over common steps")


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
    from npu_tf_profiling.raw_format import layout

    if not (rank.device_dir / layout.DATA_DIR / layout.TASK_TRACE_FILE).is_file():
        return [], []
    try:
        from npu_tf_profiling.reports.task.timeline import ns_to_us
        from npu_tf_profiling.reports.task.table import load_device_tasks
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
        lanes = chrome_trace.lanes_of_sorted(ts[sel].tolist(), end[sel].tolist())
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


# ----- the step trace, written straight to JSON text ----------------------------------------------
# The same events as ``step_trace_timeline.step_trace_events`` (names, args, tracks, lanes; a test
# holds the two equal), formatted column by column into JSON text: 1,024 ranks x 1,000 steps have
# millions of spans, so every field is a numpy column of strings joined by elementwise ``+`` (one C loop
# per field), not a dict or an f-string per span.
_CAT = json.dumps("Step Trace")
_NA = '"N/A"'


def _floats(rows: pd.DataFrame, name: str) -> np.ndarray:
    return rows[name].to_numpy(dtype="float64", na_value=np.nan)


def _text(values: np.ndarray, missing: str = _NA) -> np.ndarray:
    """Whole numbers as JSON text (object array), ``missing`` where unknown (NaN)."""
    out = np.full(values.shape, missing, dtype=object)
    known = ~np.isnan(values)
    out[known] = values[known].astype(np.int64).astype(str).astype(object)
    return out


@dataclass
class _Spans:
    """One track kind's spans: start, duration (µs, NaN unknown), name and args as JSON text, in event order."""

    ts: np.ndarray
    dur: np.ndarray
    name: np.ndarray
    args: np.ndarray

    @staticmethod
    def stack(parts: list["_Spans"]) -> "_Spans":
        """Interleave ``parts`` row by row (span i of every part, then span i + 1), as the per-row loop did."""
        if not parts:
            return _Spans(np.zeros(0), np.zeros(0), np.zeros(0, object), np.zeros(0, object))
        return _Spans(*(np.column_stack([getattr(p, f) for p in parts]).ravel() for f in ("ts", "dur", "name", "args")))


def _model_spans(rows: pd.DataFrame, n_reduce: int) -> dict[str, _Spans]:
    f = {name: _floats(rows, name) for name in st.BASE_COLUMNS + st.GETNEXT_COLUMNS}
    it_id = _text(f[st.ITERATION_ID_COL], "None")
    fp, bp, end = f[st.FP_START], f[st.BP_END], f[st.ITERATION_END]
    it_time, fp_bp, refresh, aug = f[st.ITERATION_TIME], f[st.FP_TO_BP], f[st.ITERATION_REFRESH], f[st.DATA_AUG_BOUND]
    jfp, jbp, jend = _text(fp), _text(bp), _text(end)
    iteration = _Spans(end - it_time, it_time, '"Iteration ' + it_id + '"',
                       '"Iteration ID":' + it_id + ',"FP Start":' + jfp + ',"BP End":' + jbp + ',"Iteration End":' + jend
                       + ',"Iteration Time(us)":' + _text(it_time))
    phases = _Spans.stack([
        _Spans(fp - aug, aug, '"Data_aug Bound ' + it_id + '"', '"Data_aug Bound(us)":' + _text(aug)),
        _Spans(fp, fp_bp, '"FP_BP Time ' + it_id + '"', '"FP Start":' + jfp + ',"BP End":' + jbp + ',"FP_BP Time(us)":' + _text(fp_bp)),
        _Spans(bp, refresh, '"Iteration Refresh ' + it_id + '"',
               '"BP End":' + jbp + ',"Iteration End":' + jend + ',"Iteration Refresh(us)":' + _text(refresh)),
    ])
    reduces = []
    for k in range(n_reduce):
        start, dur = _floats(rows, st.reduce_start_key(k)), _floats(rows, st.reduce_duration_key(k))
        reduces.append(_Spans(start, dur, '"Reduce_' + it_id + f'_{k + 1}"',
                              f'"Reduce Start {k + 1}":' + _text(start) + f',"Reduce End {k + 1}":' + _text(start + dur)))
    gs, ge, gt = f[st.GETNEXT_START], f[st.GETNEXT_END], f[st.GETNEXT_TIME]
    getnext = _Spans(gs, gt, np.full(len(gs), '"GetNext"', dtype=object),
                     '"Iteration ID":' + it_id + ',"GetNext Start":' + _text(gs) + ',"GetNext End":' + _text(ge)
                     + ',"GetNext Time(us)":' + _text(gt))
    return {TRACK_ITERATION: iteration, TRACK_PHASES: phases, TRACK_GETNEXT: getnext, TRACK_REDUCE: _Spans.stack(reduces)}


def _step_trace_json(table: st.StepTraceTable, labels: dict[int, str]) -> tuple[list[str], list[str], dict[int, int]]:
    """(metadata events, span events) as JSON texts, and each rank's next free tid."""
    meta: list[str] = []
    spans: list[str] = []
    next_tid: dict[int, int] = {}
    negative = 0
    dumps = json.dumps
    for device_key, device_rows in table.frame.groupby(st.DEVICE_ID, sort=True):
        pid = int(device_key)
        meta.append(dumps(chrome_trace.process_name_event(pid, labels.get(pid, f"Device {pid}")), separators=(",", ":")))
        meta.append(dumps(chrome_trace.process_sort_event(pid, pid), separators=(",", ":")))
        tid = 1
        for model_key, model_rows in device_rows.groupby(st.MODEL_ID, sort=True):
            model_id = int(model_key)
            for kind, kind_spans in _model_spans(model_rows, table.n_reduce).items():
                known = ~(np.isnan(kind_spans.ts) | np.isnan(kind_spans.dur))
                keep = known & (kind_spans.dur >= 0)
                negative += int((known & (kind_spans.dur < 0)).sum())
                if not keep.any() and kind != TRACK_ITERATION:
                    continue
                ts, dur = kind_spans.ts[keep], kind_spans.dur[keep]
                found = chrome_trace.lanes_of(ts.astype(np.int64), dur.astype(np.int64))  # whole µs, as ever
                lanes = np.zeros(len(ts), dtype=np.int64) if found is None else found
                lane_tids: dict[int, int] = {}
                for lane in sorted(set(lanes.tolist())) or [0]:
                    lane_tids[lane] = tid
                    meta.append(dumps(chrome_trace.thread_name_event(pid, tid, model_track_name(model_id, kind, lane)), separators=(",", ":")))
                    meta.append(dumps(chrome_trace.thread_sort_event(pid, tid, tid), separators=(",", ":")))
                    tid += 1
                if not len(ts):
                    continue
                tids = np.array([str(lane_tids[lane]) for lane in range(max(lane_tids) + 1)], dtype=object)[lanes]
                head = f'"ph":"X","cat":{_CAT},"pid":{pid},"tid":'
                text = ('{"name":' + kind_spans.name[keep] + "," + head + tids + ',"ts":' + _text(ts) + ',"dur":' + _text(dur)
                        + ',"args":{' + kind_spans.args[keep] + "}}")
                spans.extend(text.tolist())
        next_tid[pid] = tid
    if negative:
        warnings.warn(
            f"cluster timeline: left out {negative} span(s) with a negative duration "
            "(times out of order in the raw data; the CSV shows the values)",
            RawDataWarning,
            stacklevel=3,
        )
    return meta, spans, next_tid


def _rank_label(rank: RankData) -> str:
    where = ", ".join(x for x in (rank.host, f"pid {rank.pid}" if rank.pid is not None else None) if x)
    return f"Rank {rank.rank}" + (f" ({where})" if where else "")


def cluster_timeline_json(data: ClusterData, alignment: ClockAlignment, with_tasks: bool = True) -> tuple[str, int, list[str]]:
    """The merged timeline as JSON text (a Chrome trace array), its event count, and notes on what was left out."""
    events, notes = cluster_timeline_events(data, alignment, with_tasks)
    return "[" + ",".join(events) + "]\n", len(events), notes


def cluster_timeline_events(data: ClusterData, alignment: ClockAlignment, with_tasks: bool = True) -> tuple[list[str], list[str]]:
    """The merged timeline's events, each as JSON text, and notes on what was left out."""
    table = _shifted(data.table, alignment.shifts_us)
    meta, spans, next_tid = _step_trace_json(table, {r.rank: _rank_label(r) for r in data.ranks})
    encode = json.JSONEncoder(ensure_ascii=False, allow_nan=False, separators=(",", ":")).encode
    for rank, shift in sorted(alignment.shifts_us.items()):
        if shift:
            meta.append(encode({"name": "process_labels", "ph": "M", "pid": rank, "tid": 0, "args": {"labels": f"clock shifted by {shift:+.0f} us"}}))
    notes: list[str] = []
    extra: list[str] = []
    if with_tasks:
        for rank in data.ranks:
            for source in RANK_SOURCES:
                try:
                    events, source_notes = source(rank, data.table.frame, next_tid.get(rank.rank, 1), alignment.shifts_us.get(rank.rank, 0.0))
                except Exception as exc:  # noqa: BLE001 - one rank's extra data must not sink the cluster view
                    events, source_notes = [], [f"rank {rank.rank}: {getattr(source, '__name__', 'a source')} failed ({exc!r}); left out"]
                extra.extend(encode(e) for e in events)
                notes.extend(source_notes)
                tids = [e["tid"] for e in events if isinstance(e.get("tid"), int)]
                if tids:
                    next_tid[rank.rank] = max(tids) + 1
    return meta + spans + extra, notes
