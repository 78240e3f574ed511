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

Why columns: a million-iteration run has six million spans. The events are
formatted straight from the table's integer columns into JSON text, a chunk
of rows at a time (``trace_slices`` streams them to disk and slices the file
when it is too big to open), never as one dict per span.
"""
from __future__ import annotations

import json
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional, Union

import numpy as np

from npu_tf_profiling.reports.encoders import chrome_trace, trace_slices
from npu_tf_profiling.reports.encoders.csv_file import int_column
from npu_tf_profiling.reports import encoders
from npu_tf_profiling.reports.encoders.text_columns import arrow_texts, as_texts, column_texts, join_texts, join_usable
from npu_tf_profiling.reports.step import table as st
from npu_tf_profiling.reports.errors import RawDataWarning

# Track kinds, in display order, and the suffix after "Step Trace(Model ID:N)".
TRACK_ITERATION = "iteration"
TRACK_PHASES = "phases"
TRACK_GETNEXT = "getnext"
TRACK_REDUCE = "reduce"
_TRACK_SUFFIX = {TRACK_ITERATION: "", TRACK_PHASES: " Phases", TRACK_GETNEXT: " GetNext", TRACK_REDUCE: " Reduce"}
_CATEGORY = "Step Trace"
_NA = json.dumps(st.NA)


def model_track_name(model_id: int, kind: str = TRACK_ITERATION, lane: int = 0) -> str:
    """Thread name of one track: ``Step Trace(Model ID:N)[ suffix][ #lane]``."""
    name = f"Step Trace(Model ID:{model_id}){_TRACK_SUFFIX[kind]}"
    return name if lane == 0 else f"{name} #{lane + 1}"


@dataclass
class _Col:
    """One nullable integer column of a model's rows: values (0 where unknown) and whether known."""

    values: np.ndarray
    known: np.ndarray

    def __sub__(self, other: "_Col") -> "_Col":
        return _Col(self.values - other.values, self.known & other.known)

    def __add__(self, other: "_Col") -> "_Col":
        return _Col(self.values + other.values, self.known & other.known)

    def texts(self, lo: int, hi: int, missing: str = _NA) -> Any:
        """Rows lo..hi-1 as JSON numbers, ``missing`` where unknown (kept for the chunk: several spans show one column).

        A list of str, or an Arrow string array on the Arrow route (``encoders.text_columns``).
        """
        key = (lo, hi, missing, encoders.use_arrow(hi - lo))
        if getattr(self, "_cached_key", None) != key:
            texts = arrow_texts if key[3] else column_texts
            self._cached_key, self._cached = key, texts(self.values[lo:hi], self.known[lo:hi], missing)
        return self._cached


def _col(frame: Any, name: str) -> _Col:
    return _Col(*int_column(frame[name]))


# A piece of an event's text: fixed text, or a column with its text where unknown.
Piece = Union[str, tuple[_Col, str]]


@dataclass
class _SpanType:
    """One span per row (e.g. every row's FP_BP Time): where it sits, and how its name and args read."""

    ts: _Col
    dur: _Col
    name: list[Piece]  # the JSON string of the name
    args: list[Piece]  # the body of the args object

    def usable(self) -> np.ndarray:
        return self.ts.known & self.dur.known & (self.dur.values >= 0)

    def negative(self) -> int:
        return int((self.ts.known & self.dur.known & (self.dur.values < 0)).sum())

    def event(self, pid: int, tid: Piece) -> list[Piece]:
        """One span's pieces, keys in the order of the dict form, so the text is what ``json.dumps`` writes."""
        return ['{"name":', *self.name, f',"ph":"X","cat":"{_CATEGORY}","ts":', (self.ts, _NA), ',"dur":', (self.dur, _NA),
                f',"pid":{pid},"tid":', tid, ',"args":{', *self.args, "}}"]


def _render(pieces: list[Piece], lo: int, hi: int) -> Any:
    """Rows lo..hi-1 of the pieces joined: a list of str, or an Arrow string array on the Arrow route."""
    if encoders.use_arrow(hi - lo):
        return join_texts([p if isinstance(p, str) else p[0].texts(lo, hi, p[1]) for p in pieces])
    template = "".join(p.replace("{", "{{").replace("}", "}}") if isinstance(p, str) else "{}" for p in pieces)
    return list(map(template.format, *(p[0].texts(lo, hi, p[1]) for p in pieces if not isinstance(p, str))))


class _Track:
    """The spans of one kind of one model: span types interleaved per row, with each span's tid."""

    def __init__(self, pid: int, kind: str, types: list[_SpanType]) -> None:
        self.pid, self.kind, self.types = pid, kind, types
        self.usable = np.column_stack([t.usable() for t in types]) if types else np.zeros((0, 0), bool)
        self.negative = sum(t.negative() for t in types)
        self.lanes = self._lanes()

    def _lanes(self) -> Optional[np.ndarray]:
        """Lane of every (row, type) span (row-major order, as ``assign_lanes`` numbers them); None: all in one lane."""
        if not self.usable.any():
            return None
        ts = np.column_stack([t.ts.values for t in self.types])[self.usable]
        dur = np.column_stack([t.dur.values for t in self.types])[self.usable]
        found = chrome_trace.lanes_of(ts, dur)
        if found is None:
            return None  # no overlap: one lane (the common case)
        lanes = np.zeros(self.usable.shape, dtype=np.int64)
        lanes[self.usable] = found
        return lanes

    def has_spans(self) -> bool:
        return bool(self.usable.any())

    def lane_count(self) -> int:
        return 1 if self.lanes is None else int(self.lanes.max()) + 1

    def encode(self, lo: int, hi: int, first_tid: int) -> Any:
        """Each row's spans of this track, rows lo..hi-1 of the model, as JSON joined by commas ("" for none)."""
        per_type = []
        for j, span in enumerate(self.types):
            tid: Piece = str(first_tid) if self.lanes is None else (self._tids(j, first_tid), "")
            per_type.append((_render(span.event(self.pid, tid), lo, hi), self.usable[lo:hi, j]))
        if encoders.use_arrow(hi - lo):
            return join_usable(per_type)
        for events, usable in per_type:
            for i in np.flatnonzero(~usable).tolist():
                events[i] = ""
        if len(per_type) == 1:
            return per_type[0][0]
        return [",".join(filter(None, row)) for row in zip(*(events for events, _ in per_type))]

    def _tids(self, j: int, first_tid: int) -> _Col:
        """The tid of each row's span of type ``j`` (its lane's), as a column; made once per track and type."""
        cache = self.__dict__.setdefault("_tid_cols", {})
        if (j, first_tid) not in cache:
            assert self.lanes is not None
            cache[(j, first_tid)] = _Col(self.lanes[:, j] + first_tid, np.ones(len(self.lanes), dtype=bool))
        return cache[(j, first_tid)]


def _model_tracks(rows: Any, n_reduce: int, pid: int) -> list[_Track]:
    c = {name: _col(rows, name) for name in st.BASE_COLUMNS + st.GETNEXT_COLUMNS}
    ids = c[st.ITERATION_ID_COL]
    fp, bp, end = c[st.FP_START], c[st.BP_END], c[st.ITERATION_END]
    it_time, fp_bp, refresh, aug = c[st.ITERATION_TIME], c[st.FP_TO_BP], c[st.ITERATION_REFRESH], c[st.DATA_AUG_BOUND]
    gs, ge, gt = c[st.GETNEXT_START], c[st.GETNEXT_END], c[st.GETNEXT_TIME]

    def named(prefix: str, suffix: str = "") -> list[Piece]:
        return [f'"{prefix}', (ids, "None"), f'{suffix}"']

    def fields(*pairs: tuple[str, _Col]) -> list[Piece]:
        pieces: list[Piece] = []
        for i, (key, col) in enumerate(pairs):
            pieces += [("," if i else "") + json.dumps(key) + ":", (col, "null" if col is ids else _NA)]
        return pieces

    iteration = _SpanType(end - it_time, it_time, named("Iteration "), fields(
        ("Iteration ID", ids), ("FP Start", fp), ("BP End", bp), ("Iteration End", end), ("Iteration Time(us)", it_time)))
    phases = [
        _SpanType(fp - aug, aug, named("Data_aug Bound "), fields(("Data_aug Bound(us)", aug))),
        _SpanType(fp, fp_bp, named("FP_BP Time "), fields(("FP Start", fp), ("BP End", bp), ("FP_BP Time(us)", fp_bp))),
        _SpanType(bp, refresh, named("Iteration Refresh "), fields(("BP End", bp), ("Iteration End", end), ("Iteration Refresh(us)", refresh))),
    ]
    reduces = []
    for k in range(n_reduce):
        start, dur = _col(rows, st.reduce_start_key(k)), _col(rows, st.reduce_duration_key(k))
        reduces.append(_SpanType(start, dur, named("Reduce_", f"_{k + 1}"),
                                 fields((f"Reduce Start {k + 1}", start), (f"Reduce End {k + 1}", start + dur))))
    getnext = _SpanType(gs, gt, [json.dumps("GetNext")], fields(
        ("Iteration ID", ids), ("GetNext Start", gs), ("GetNext End", ge), ("GetNext Time(us)", gt)))
    return [_Track(pid, TRACK_ITERATION, [iteration]), _Track(pid, TRACK_PHASES, phases),
            _Track(pid, TRACK_GETNEXT, [getnext]), _Track(pid, TRACK_REDUCE, reduces)]


@dataclass
class StepTraceTimeline:
    """The timeline of a table as ``trace_slices`` input: metadata events, sections over rows, the row count."""

    metadata: list[chrome_trace.Event]
    sections: list[trace_slices.Section]
    rows: int
    negative: int


def _section(track: _Track, start: int, stop: int, first_tid: int) -> trace_slices.Section:
    """The track's spans as a section over all rows of the table; rows outside start..stop-1 have none."""

    def encode(lo: int, hi: int) -> Any:
        a, b = max(lo, start), min(hi, stop)
        if a >= b:
            return [""] * (hi - lo)
        if a == lo and b == hi:
            return track.encode(a - start, b - start, first_tid)
        return [""] * (a - lo) + as_texts(track.encode(a - start, b - start, first_tid)) + [""] * (hi - b)
    return encode


def step_trace_timeline(table: st.StepTraceTable) -> StepTraceTimeline:
    """Plan the timeline of every device and model in ``table`` (rows in (device, model, iteration) order)."""
    frame = table.frame
    devices = frame[st.DEVICE_ID].to_numpy(dtype="int64", na_value=0)
    models = frame[st.MODEL_ID].to_numpy(dtype="int64", na_value=0)
    order = np.lexsort((np.arange(len(frame)), models, devices))
    if not np.array_equal(order, np.arange(len(frame))):  # already in order (the usual case): no copy of the table
        frame, devices, models = frame.iloc[order], devices[order], models[order]
    # Contiguous (device, model) groups, as row ranges: slices of the table, not copies.
    cuts = np.flatnonzero((devices[1:] != devices[:-1]) | (models[1:] != models[:-1])) + 1
    starts, stops = [0, *cuts.tolist()], [*cuts.tolist(), len(frame)]
    metadata: list[chrome_trace.Event] = []
    sections: list[trace_slices.Section] = []
    negative = 0
    next_tid = 1
    for start, stop in zip(starts, stops) if len(frame) else ():
        pid = int(devices[start])
        if start == 0 or devices[start - 1] != pid:
            metadata.append(chrome_trace.process_name_event(pid, f"Device {pid}"))
            metadata.append(chrome_trace.process_sort_event(pid, pid))
            next_tid = 1
        model_id = int(models[start])
        for track in _model_tracks(frame.iloc[start:stop], table.n_reduce, pid):
            negative += track.negative
            if not track.has_spans() and track.kind != TRACK_ITERATION:
                continue
            for lane in range(track.lane_count()):
                metadata.append(chrome_trace.thread_name_event(pid, next_tid + lane, model_track_name(model_id, track.kind, lane)))
                metadata.append(chrome_trace.thread_sort_event(pid, next_tid + lane, next_tid + lane))
            sections.append(_section(track, start, stop, next_tid))
            next_tid += track.lane_count()
    return StepTraceTimeline(metadata, sections, len(frame), negative)


def _warn_negative(timeline: StepTraceTimeline) -> None:
    if timeline.negative:
        warnings.warn(
            f"step trace timeline: left out {timeline.negative} span(s) with a negative duration "
            "(times out of order in the raw data; the CSV shows the values)",
            RawDataWarning,
            stacklevel=3,
        )


def write_step_trace_json(
    table: st.StepTraceTable, out_dir: Path, whole_name: str, stem: str, timestamp: str,
    slice_bytes: int = trace_slices.DEFAULT_SLICE_BYTES,
) -> list[Path]:
    """Write the timeline as ``out_dir/whole_name``, or as CANN slices above ``slice_bytes``; returns the files."""
    timeline = step_trace_timeline(table)
    _warn_negative(timeline)
    return trace_slices.write_trace(out_dir, whole_name, stem, timestamp, timeline.metadata, timeline.sections,
                                    timeline.rows, slice_bytes=slice_bytes)


def step_trace_events(table: st.StepTraceTable) -> list[chrome_trace.Event]:
    """All trace events (metadata first, then spans) for every device and model in ``table``, as dicts.

    For small tables (the msprof task timeline, tests): the same text the file
    writer streams, parsed back, so both can never disagree.
    """
    timeline = step_trace_timeline(table)
    _warn_negative(timeline)
    texts = [trace_slices.encode_event(e) for e in timeline.metadata]
    for section in timeline.sections:
        texts.extend(filter(None, as_texts(section(0, timeline.rows))))
    return json.loads("[" + ",".join(texts) + "]")
