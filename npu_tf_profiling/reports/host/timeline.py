"""The host usage and markers as Chrome-trace events, for the one host timeline (``host.trace_file``).

In each device's process (``Device <id>``, as in the step trace): CANN's layer names as counters (``CPU
Usage``, ``Memory Usage``, ``Disk Usage``, ``Network Usage``; CANN draws them in msprof_*.json), the
``profile_memory`` peaks as ``Peak Memory``, and the mstx markers: one track per thread and domain,
ranges as spans (spread over lanes where they overlap, since Perfetto refuses overlapping spans on
one track) and marks as instants. A counter of a long run is thinned to ``MAX_COUNTER_POINTS`` (each point
the largest of the samples it stands for). Times are epoch µs, the step trace's clock.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from npu_tf_profiling.reports.encoders import chrome_trace
from npu_tf_profiling.raw_format.mstx_markers import Marker
from npu_tf_profiling.reports.host.raw import HostSamples
from npu_tf_profiling.reports.host.usage import process_cores, rates

Event = chrome_trace.Event
_COUNTER_TID = 0  # counters belong to the process; the tid is only there for viewers that want one
MARKER_TID = 10_100  # the markers' tracks come after the step trace's and with_stack's (host.stack_files)
# A day at 50 Hz is 4.3M samples: beyond this many points a counter is thinned to the largest value of each run
# of consecutive samples (drawn at the run's last time), so the file stays small enough to open and no peak is lost.
MAX_COUNTER_POINTS = 20_000


def _thinned(t_us: np.ndarray, series: dict[str, np.ndarray]) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    if len(t_us) <= MAX_COUNTER_POINTS:
        return t_us, series
    step = -(-len(t_us) // MAX_COUNTER_POINTS)
    starts = np.arange(0, len(t_us), step)
    ends = np.minimum(starts + step, len(t_us)) - 1
    with np.errstate(invalid="ignore"):
        thinned = {label: np.fmax.reduceat(np.where(np.isfinite(v), v, -np.inf), starts) for label, v in series.items()}
    return t_us[ends], {label: np.where(np.isinf(v), np.nan, v) for label, v in thinned.items()}


def _counter(pid: int, name: str, t_us: np.ndarray, series: dict[str, np.ndarray]) -> list[Event]:
    t_us, series = _thinned(t_us, series)
    events = []
    for i, ts in enumerate(t_us):
        args = {label: round(float(values[i]), 2) for label, values in series.items() if np.isfinite(values[i])}
        if args:
            events.append({"name": name, "ph": "C", "pid": pid, "tid": _COUNTER_TID, "ts": round(float(ts), 1), "args": args})
    return events


def _sample_events(pid: int, samples: HostSamples) -> list[Event]:
    """The counters; a rate is drawn at the end of the interval it measures."""
    events: list[Event] = []
    busy = process_cores(samples)
    if busy is not None:
        events += _counter(pid, "CPU Usage", busy[0], {"process cores": busy[1]})
    sys_cpu = rates(samples, "sys_cpu")
    if sys_cpu is not None:
        total = sys_cpu[1].sum(axis=1)
        used = np.divide(100.0 * (total - sys_cpu[1][:, 5]), total, out=np.full(total.shape, np.nan), where=total > 0)
        events += _counter(pid, "CPU Usage", sys_cpu[0], {"system %": used})
    memory: dict[str, np.ndarray] = {}
    if samples.has("mem"):
        memory["process RSS MB"] = samples.columns["mem"] / 1024
    if samples.has("sys_mem"):
        memory["system used MB"] = samples.columns["sys_mem"][:, 1] / 1024
    if memory:
        events += _counter(pid, "Memory Usage", samples.t_us, memory)
    for key, name, labels in (("disk", "Disk Usage", ("read KB/s", "write KB/s")),
                              ("net", "Network Usage", ("received KB/s", "sent KB/s"))):
        per_s = rates(samples, key)
        if per_s is not None:
            events += _counter(pid, name, per_s[0], {labels[0]: per_s[1][:, 0] / 1024, labels[1]: per_s[1][:, 1] / 1024})
    if samples.has("hwm_kb"):
        peaks = {"host peak MB": samples.columns["hwm_kb"] / 1024}
        if samples.has("dev_peak"):
            peaks["device peak MB"] = samples.columns["dev_peak"] / 2**20
        events += _counter(pid, "Peak Memory", samples.t_us, peaks)
    return events


def _marker_events(pid: int, markers: list[Marker]) -> list[Event]:
    events: list[Event] = []
    tracks: dict[tuple[int, str], list[Marker]] = {}
    for marker in markers:
        tracks.setdefault((marker.tid, marker.domain), []).append(marker)
    next_tid = MARKER_TID
    for (thread, domain), own in sorted(tracks.items()):
        ranges = [m for m in own if m.kind == "range"]
        lanes = chrome_trace.assign_lanes([(m.start_us, m.end_us - m.start_us) for m in ranges])
        lane_count = max(lanes, default=0) + 1
        for lane in range(lane_count):
            suffix = "" if lane == 0 else f" #{lane + 1}"
            events.append(chrome_trace.thread_name_event(pid, next_tid + lane, f"mstx {domain} (thread {thread}){suffix}"))
        for marker, lane in zip(ranges, lanes):
            events.append({"name": marker.message, "ph": "X", "cat": f"mstx {domain}", "pid": pid, "tid": next_tid + lane,
                           "ts": round(marker.start_us, 3), "dur": round(marker.end_us - marker.start_us, 3)})
        for marker in own:
            if marker.kind == "mark":
                events.append({"name": marker.message, "ph": "i", "s": "t", "cat": f"mstx {domain}", "pid": pid,
                               "tid": next_tid, "ts": round(marker.start_us, 3)})
        next_tid += lane_count
    return events


def usage_events(device_id: int, samples: Optional[HostSamples], markers: list[Marker]) -> list[Event]:
    """One device's counters and marker tracks ([] when it has neither)."""
    return (_sample_events(device_id, samples) if samples is not None else []) + _marker_events(device_id, markers)
