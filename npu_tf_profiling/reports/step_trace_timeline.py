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
from npu_tf_profiling.reports import step_trace as st
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


def _int(value: Any) -> Optional[int]:
    return None if value is None or value is pd.NA or pd.isna(value) else int(value)


def _shown(value: Optional[int]) -> Any:
    return st.NA if value is None else value


class _Spans:
    """Collects (kind, ts, dur, name, args) for one model, dropping unusable spans."""

    def __init__(self) -> None:
        self.by_kind: dict[str, list[tuple[int, int, str, dict[str, Any]]]] = defaultdict(list)
        self.negative = 0

    def add(self, kind: str, ts: Optional[int], dur: Optional[int], name: str, args: dict[str, Any]) -> None:
        if ts is None or dur is None:
            return
        if dur < 0:
            self.negative += 1
            return
        self.by_kind[kind].append((ts, dur, name, args))


def _model_spans(rows: pd.DataFrame, n_reduce: int) -> _Spans:
    spans = _Spans()
    for row in rows.to_dict("records"):
        it_id = _int(row[st.ITERATION_ID_COL])
        fp, bp, end = _int(row[st.FP_START]), _int(row[st.BP_END]), _int(row[st.ITERATION_END])
        it_time = _int(row[st.ITERATION_TIME])
        fp_bp, refresh, aug = _int(row[st.FP_TO_BP]), _int(row[st.ITERATION_REFRESH]), _int(row[st.DATA_AUG_BOUND])
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
        for k in range(n_reduce):
            start = _int(row[st.reduce_start_key(k)])
            dur = _int(row[st.reduce_duration_key(k)])
            spans.add(
                TRACK_REDUCE,
                start,
                dur,
                f"Reduce_{it_id}_{k + 1}",
                {f"Reduce Start {k + 1}": _shown(start), f"Reduce End {k + 1}": _shown(None if start is None or dur is None else start + dur)},
            )
        gn_start, gn_end, gn_time = _int(row[st.GETNEXT_START]), _int(row[st.GETNEXT_END]), _int(row[st.GETNEXT_TIME])
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
    for device_id in sorted(int(d) for d in frame[st.DEVICE_ID].dropna().unique()):
        pid = device_id
        events.append(chrome_trace.process_name_event(pid, f"Device {device_id}"))
        events.append(chrome_trace.process_sort_event(pid, device_id))
        device_rows = frame[frame[st.DEVICE_ID] == device_id]
        next_tid = 1
        for model_id in sorted(int(m) for m in device_rows[st.MODEL_ID].dropna().unique()):
            spans = _model_spans(device_rows[device_rows[st.MODEL_ID] == model_id], table.n_reduce)
            negative += spans.negative
            for kind in _TRACK_SUFFIX:
                items = spans.by_kind.get(kind, [])
                if not items and kind != TRACK_ITERATION:
                    continue
                lanes = chrome_trace.assign_lanes([(ts, dur) for ts, dur, _, _ in items])
                lane_tids: dict[int, int] = {}
                for lane in sorted(set(lanes)) or [0]:
                    lane_tids[lane] = next_tid
                    events.append(chrome_trace.thread_name_event(pid, next_tid, model_track_name(model_id, kind, lane)))
                    events.append(chrome_trace.thread_sort_event(pid, next_tid, next_tid))
                    next_tid += 1
                for (ts, dur, name, args), lane in zip(items, lanes):
                    spans_out.append(
                        {"name": name, "ph": "X", "cat": _CATEGORY, "ts": ts, "dur": dur, "pid": pid, "tid": lane_tids[lane], "args": args}
                    )
    if negative:
        warnings.warn(
            f"step trace timeline: left out {negative} span(s) with a negative duration "
            "(times out of order in the raw data; the CSV shows the values)",
            RawDataWarning,
            stacklevel=2,
        )
    return events + spans_out
