"""Chrome trace event format helpers shared by every timeline we write.

Format choice: a plain **JSON array of events** (what msprof writes; Perfetto
and chrome://tracing both open it). The validator also accepts the object form
``{"traceEvents": [...]}`` so it can check files from other tools.

Perfetto does not accept overlapping complete (``"ph": "X"``) events on one
track, so writers put each kind of span on its own thread and, if spans of
one kind still overlap, spread them over extra "lanes" (``assign_lanes``).
``validate_chrome_trace`` is what tests (here and in later issues) use to
prove a timeline is loadable.
"""
from __future__ import annotations

import json
import math
from collections import defaultdict
from typing import Any, Mapping, Optional, Sequence, Union

import numpy as np

Event = dict[str, Any]

# Phases this project writes; others are tolerated by the validator but their
# fields are not checked in depth.
_METADATA_NAMES = {"process_name", "process_labels", "process_sort_index", "thread_name", "thread_sort_index"}


def process_name_event(pid: int, name: str) -> Event:
    return {"name": "process_name", "ph": "M", "pid": pid, "tid": 0, "args": {"name": name}}


def process_sort_event(pid: int, index: int) -> Event:
    return {"name": "process_sort_index", "ph": "M", "pid": pid, "tid": 0, "args": {"sort_index": index}}


def thread_name_event(pid: int, tid: int, name: str) -> Event:
    return {"name": "thread_name", "ph": "M", "pid": pid, "tid": tid, "args": {"name": name}}


def thread_sort_event(pid: int, tid: int, index: int) -> Event:
    return {"name": "thread_sort_index", "ph": "M", "pid": pid, "tid": tid, "args": {"sort_index": index}}


def assign_lanes(spans: Sequence[tuple[float, float]]) -> list[int]:
    """Give each (ts, dur) span a lane so spans in one lane never overlap.

    Greedy interval partitioning in start order, reusing the lowest free lane:
    minimal lane count, and deterministic, so regenerated files are identical.
    Spans that merely touch (one ends where the next starts) share a lane.
    Returns the lane of each span, in the input order.
    """
    order = sorted(range(len(spans)), key=lambda i: (spans[i][0], spans[i][1], i))
    lanes = [0] * len(spans)
    for i, lane in zip(order, lanes_of_sorted([spans[i][0] for i in order], [spans[i][0] + spans[i][1] for i in order])):
        lanes[i] = lane
    return lanes


def lanes_of_sorted(ts: Sequence[float], end: Sequence[float]) -> list[int]:
    """``assign_lanes``' loop, for spans already in start order: greedy, lowest free lane (touching spans share)."""
    lane_end: list[float] = []
    out = [0] * len(ts)
    for i, (t, e) in enumerate(zip(ts, end)):
        for lane, busy in enumerate(lane_end):
            if busy <= t:
                lane_end[lane] = e
                out[i] = lane
                break
        else:
            out[i] = len(lane_end)
            lane_end.append(e)
    return out


def _in_start_order(ts: np.ndarray, dur: np.ndarray) -> bool:
    """Whether the spans are sorted by (start, length) already; boolean temporaries only (1 byte a span)."""
    if not bool(np.all(ts[1:] >= ts[:-1])):
        return False
    tie = ts[1:] == ts[:-1]
    return bool(np.all(dur[1:][tie] >= dur[:-1][tie])) if tie.any() else True


def lanes_of(ts: np.ndarray, dur: np.ndarray) -> Optional[np.ndarray]:
    """``assign_lanes`` of spans given as columns: the same lanes, the greedy loop run only where it must.
    None when every span is in lane 0 (no two overlap: the usual case, and no column is made for it).

    In start order, a span that starts at or after every earlier span's end finds every lane free, as at
    the start: ``assign_lanes`` gives it lane 0 and, from there on, numbers the lanes as it would from
    scratch. So the spans split into runs of overlapping spans, each laid out on its own. A run of one
    span is lane 0, a run of two is lanes 0 and 1, both without a loop (nearly every span of a step
    trace); the greedy loop runs on the longer runs only. Spans already in start order (a step trace's,
    row by row) are not sorted again: the sort was most of the 1.1 s a 1M-iteration ``report`` spent on
    its lanes (cProfile).
    """
    n = len(ts)
    if n < 2:
        return None
    if _in_start_order(ts, dur):  # a step trace's spans, row by row: no sort (the sort was most of the time)
        order, start, length = None, ts, dur
    else:
        order = np.lexsort((dur, ts))  # stable: equal spans keep their input order, as assign_lanes' sort key does
        start, length = ts[order], dur[order]
    reach = start + length
    np.maximum.accumulate(reach, out=reach)  # the latest end so far, in place: one temporary column
    overlaps = start[1:] < reach[:-1]  # starts before some earlier span's end
    del reach
    if not overlaps.any():
        return None
    is_start = np.concatenate(([True], ~overlaps))  # a run's first span
    run_ends_next = np.append(is_start[2:], True)  # for span i: a run starts at i + 2 (or the spans end there)
    shared = is_start[:-1] & overlaps  # span i starts a run that span i + 1 is in
    in_order = np.zeros(n, dtype=np.int64)
    in_order[np.flatnonzero(shared & run_ends_next) + 1] = 1  # runs of two: lanes 0 and 1
    for lo in np.flatnonzero(shared & ~run_ends_next).tolist():  # longer runs: the greedy loop on each
        after = is_start[lo + 1:]
        first = int(np.argmax(after))  # the next run's first span (argmax stops at the first True)
        hi = lo + 1 + first if after[first] else n
        in_order[lo:hi] = lanes_of_sorted(start[lo:hi].tolist(), (start[lo:hi] + length[lo:hi]).tolist())
    if order is None:
        return in_order
    lanes = np.empty(n, dtype=np.int64)
    lanes[order] = in_order
    return lanes


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _events_of(trace: Union[Sequence[Mapping[str, Any]], Mapping[str, Any]]) -> tuple[list[Any], list[str]]:
    if isinstance(trace, Mapping):
        events = trace.get("traceEvents")
        if not isinstance(events, list):
            return [], ["object form without a 'traceEvents' list"]
        return events, []
    if isinstance(trace, (list, tuple)):
        return list(trace), []
    return [], [f"a trace is a JSON array or an object with traceEvents, not {type(trace).__name__}"]


def validate_chrome_trace(
    trace: Union[Sequence[Mapping[str, Any]], Mapping[str, Any]],
    require_thread_names: bool = True,
) -> list[str]:
    """Return the problems that would make the trace fail to load or mislead; [] if none.

    Checks: each event is an object with a string ``ph``; ``X`` events have a
    string name, ``pid``/``tid``, finite ``ts`` and a finite ``dur`` ≥ 0;
    metadata (``M``) events name a known kind and carry ``args``; ``args``,
    when present, is an object; the whole thing is JSON-serialisable; no two
    ``X`` events on one (pid, tid) overlap (touching is fine; nesting counts
    as overlap because Perfetto rejects it for imported JSON in general); and,
    with ``require_thread_names``, every (pid, tid) holding ``X`` events has a
    ``thread_name`` so users see what each track is.
    """
    events, problems = _events_of(trace)
    spans: dict[tuple[Any, Any], list[tuple[float, float, str]]] = defaultdict(list)
    named_threads: set[tuple[Any, Any]] = set()
    for i, event in enumerate(events):
        where = f"event {i}"
        if not isinstance(event, Mapping):
            problems.append(f"{where}: not an object")
            continue
        ph = event.get("ph")
        if not isinstance(ph, str) or not ph:
            problems.append(f"{where}: missing 'ph'")
            continue
        if "args" in event and not isinstance(event["args"], Mapping):
            problems.append(f"{where}: 'args' is not an object")
        if ph == "M":
            if event.get("name") not in _METADATA_NAMES:
                problems.append(f"{where}: unknown metadata event {event.get('name')!r}")
            if not isinstance(event.get("args"), Mapping):
                problems.append(f"{where}: metadata without 'args'")
            if "pid" not in event:
                problems.append(f"{where}: metadata without 'pid'")
            if event.get("name") == "thread_name":
                if "tid" not in event:
                    problems.append(f"{where}: thread_name without 'tid'")
                named_threads.add((event.get("pid"), event.get("tid")))
            continue
        if not isinstance(event.get("name"), str):
            problems.append(f"{where}: missing 'name'")
        for key in ("pid", "tid"):
            if key not in event:
                problems.append(f"{where}: missing '{key}'")
        if not _number(event.get("ts")):
            problems.append(f"{where}: 'ts' missing or not a finite number")
            continue
        if ph == "X":
            dur = event.get("dur")
            if not _number(dur):
                problems.append(f"{where} ({event.get('name')!r}): X event without a finite 'dur'")
                continue
            if dur < 0:
                problems.append(f"{where} ({event.get('name')!r}): negative 'dur' {dur}")
                continue
            spans[(event.get("pid"), event.get("tid"))].append((event["ts"], dur, str(event.get("name"))))
    for (pid, tid), items in spans.items():
        items.sort(key=lambda s: (s[0], s[1]))
        # Compare each span with the furthest-reaching earlier one, so a long span
        # overlapping several later ones is reported for each of them.
        ts0, dur0, name0 = items[0]
        for ts1, dur1, name1 in items[1:]:
            if ts1 < ts0 + dur0:
                problems.append(
                    f"pid {pid} tid {tid}: {name1!r} at {ts1} overlaps {name0!r} ({ts0} + {dur0})"
                )
            if ts1 + dur1 > ts0 + dur0:
                ts0, dur0, name0 = ts1, dur1, name1
        if require_thread_names and (pid, tid) not in named_threads:
            problems.append(f"pid {pid} tid {tid}: X events on a thread without a thread_name")
    try:
        json.dumps(events, allow_nan=False)
    except (TypeError, ValueError) as exc:
        problems.append(f"not JSON-serialisable: {exc}")
    return problems


def dumps_events(events: Sequence[Event]) -> str:
    """Serialise events as one compact JSON array.

    One ``json.dumps`` call (the C encoder end to end) is about twice as fast
    as encoding event by event, which matters for timelines of millions of
    events; viewers do not care about line breaks.
    """
    return json.dumps(list(events), ensure_ascii=False, allow_nan=False, separators=(",", ":")) + "\n"
