"""The step-trace timeline (``step_trace_*.json``) built from a ``StepTraceTable``.

Built from the same table as the CSV, so both files always agree. Layout, in
Chrome trace format (see ``chrome_trace``):

* one process per device: ``pid`` = device id, named ``Device <id>``;
* per Model ID, threads (tracks) all named after ``Step Trace(Model ID:N)``:

  - ``Step Trace(Model ID:N)``: ``Iteration {id}`` spans (previous Iteration
    End → Iteration End; FP Start → Iteration End for a first iteration);
  - ``Step Trace(Model ID:N) Phases``: ``Data_aug Bound {id}``,
    ``FP_BP Time {id}``, ``Iteration Refresh {id}``, which tile the iteration;
  - ``Step Trace(Model ID:N) GetNext``: ``GetNext`` (only when both ends are known);
  - ``Step Trace(Model ID:N) Reduce``: ``Reduce_{id}_{k}`` (k from 1, in the
    order of the CSV's Reduce pairs).

  The Iteration span contains the phases, and reduces overlap compute, so each
  kind has its own track. Should spans of one kind still overlap (odd data,
  overlapping all-reduce groups), they are spread over extra tracks named
  ``... #2``, ``... #3`` so no track ever holds overlapping ``X`` events.

``ts``/``dur`` are whole µs since the Unix epoch (the CSV's numbers). A span
whose duration is unknown is left out; one whose duration is negative (which
only broken clocks produce) is left out with a ``RawDataWarning``.
"""
from __future__ import annotations

import warnings
from collections import defaultdict
from typing import Any, Optional

import pandas as pd

from npu_tf_profiling.reports import chrome_trace
from npu_tf_profiling.reports.step import table as st
from npu_tf_profiling.reports.errors import RawDataWarning

# Track kinds, in display order, and the suffix after "Step Trace(Model ID:N)".
TRACK_ITERATION = "iteration"
TRACK_PHASES = "phases"
TRACK_GETNEXT = "getnext"
TRACK_REDUCE = "reduce"
_TRACK_SUFFIX = {TRACK_ITERATION: "", TRACK_PHASES: " Phases", TRACK_GETNEXT: " GetNext", TRACK_REDUCE: " Reduce"}
_CATEGORY = "Step Trace"


def model_track_name(model_id: int, kind: str = TRACK_ITERATION, lane: int = 0) -> str:
    """Thread name of one track: ``Step Trace(Model ID:N)[ suffix][ #lane]``."""
    name = f"Step Trace(Model ID:{model_id}){_TRACK_SUFFIX[kind]}"
    return name if lane == 0 else f"{name} #{lane + 1}"


def _column(rows: pd.DataFrame, name: str) -> list[Optional[int]]:
    """A nullable Int64 column as a list of Python ints / None (fast, JSON-ready)."""
    col = rows[name]
    return [None if missing else int(v) for v, missing in zip(col.to_numpy(dtype="float64", na_value=0.0), col.isna().to_numpy())]


def _shown(value: Optional[int]) -> Any:
    return st.NA if value is None else value


class _Spans:
    """Collects the X events of one model by track kind, dropping unusable spans.

    Events are created complete (``tid`` is filled in once lanes are known) so
    each span costs one dict: large runs have hundreds of thousands.
    """

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.by_kind: dict[str, list[chrome_trace.Event]] = defaultdict(list)
        self.negative = 0

    def add(self, kind: str, ts: Optional[int], dur: Optional[int], name: str, args: dict[str, Any]) -> None:
        if ts is None or dur is None:
            return
        if dur < 0:
            self.negative += 1
            return
        self.by_kind[kind].append(
            {"name": name, "ph": "X", "cat": _CATEGORY, "ts": ts, "dur": dur, "pid": self.pid, "tid": 0, "args": args}
        )


def _model_spans(rows: pd.DataFrame, n_reduce: int, pid: int) -> _Spans:
    spans = _Spans(pid)
    c = {name: _column(rows, name) for name in st.BASE_COLUMNS + st.GETNEXT_COLUMNS}
    reduces = [(_column(rows, st.reduce_start_key(k)), _column(rows, st.reduce_duration_key(k))) for k in range(n_reduce)]
    for i, it_id in enumerate(c[st.ITERATION_ID_COL]):
        fp, bp, end = c[st.FP_START][i], c[st.BP_END][i], c[st.ITERATION_END][i]
        it_time, fp_bp = c[st.ITERATION_TIME][i], c[st.FP_TO_BP][i]
        refresh, aug = c[st.ITERATION_REFRESH][i], c[st.DATA_AUG_BOUND][i]
        spans.add(
            TRACK_ITERATION,
            None if end is None or it_time is None else end - it_time,
            it_time,
            f"Iteration {it_id}",
            {
                "Iteration ID": it_id,
                "FP Start": _shown(fp),
                "BP End": _shown(bp),
                "Iteration End": _shown(end),
                "Iteration Time(us)": _shown(it_time),
            },
        )
        spans.add(
            TRACK_PHASES,
            None if fp is None or aug is None else fp - aug,
            aug,
            f"Data_aug Bound {it_id}",
            {"Data_aug Bound(us)": _shown(aug)},
        )
        spans.add(
            TRACK_PHASES, fp, fp_bp, f"FP_BP Time {it_id}", {"FP Start": _shown(fp), "BP End": _shown(bp), "FP_BP Time(us)": _shown(fp_bp)}
        )
        spans.add(
            TRACK_PHASES,
            bp,
            refresh,
            f"Iteration Refresh {it_id}",
            {"BP End": _shown(bp), "Iteration End": _shown(end), "Iteration Refresh(us)": _shown(refresh)},
        )
        for k, (starts, durs) in enumerate(reduces):
            start, dur = starts[i], durs[i]
            spans.add(
                TRACK_REDUCE,
                start,
                dur,
                f"Reduce_{it_id}_{k + 1}",
                {f"Reduce Start {k + 1}": _shown(start), f"Reduce End {k + 1}": _shown(None if start is None or dur is None else start + dur)},
            )
        gn_start, gn_end, gn_time = c[st.GETNEXT_START][i], c[st.GETNEXT_END][i], c[st.GETNEXT_TIME][i]
        spans.add(
            TRACK_GETNEXT,
            gn_start,
            gn_time,
            "GetNext",
            {"Iteration ID": it_id, "GetNext Start": _shown(gn_start), "GetNext End": _shown(gn_end), "GetNext Time(us)": _shown(gn_time)},
        )
    return spans


def step_trace_events(table: st.StepTraceTable) -> list[chrome_trace.Event]:
    """All trace events (metadata first, then spans) for every device and model in ``table``."""
    events: list[chrome_trace.Event] = []
    spans_out: list[chrome_trace.Event] = []
    negative = 0
    frame = table.frame
    for device_key, device_rows in frame.groupby(st.DEVICE_ID, sort=True):
        device_id = pid = int(device_key)
        events.append(chrome_trace.process_name_event(pid, f"Device {device_id}"))
        events.append(chrome_trace.process_sort_event(pid, device_id))
        next_tid = 1
        for model_key, model_rows in device_rows.groupby(st.MODEL_ID, sort=True):
            model_id = int(model_key)
            spans = _model_spans(model_rows, table.n_reduce, pid)
            negative += spans.negative
            for kind in _TRACK_SUFFIX:
                items = spans.by_kind.get(kind, [])
                if not items and kind != TRACK_ITERATION:
                    continue
                lanes = chrome_trace.assign_lanes([(e["ts"], e["dur"]) for e in items])
                lane_tids: dict[int, int] = {}
                for lane in sorted(set(lanes)) or [0]:
                    lane_tids[lane] = next_tid
                    events.append(chrome_trace.thread_name_event(pid, next_tid, model_track_name(model_id, kind, lane)))
                    events.append(chrome_trace.thread_sort_event(pid, next_tid, next_tid))
                    next_tid += 1
                for event, lane in zip(items, lanes):
                    event["tid"] = lane_tids[lane]
                spans_out.extend(items)
    if negative:
        warnings.warn(
            f"step trace timeline: left out {negative} span(s) with a negative duration "
            "(times out of order in the raw data; the CSV shows the values)",
            RawDataWarning,
            stacklevel=2,
        )
    return events + spans_out
