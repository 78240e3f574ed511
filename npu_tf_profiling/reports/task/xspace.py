"""TensorFlow 2 task traces: ``tf.profiler``'s XSpace, decoded without TensorFlow, as per-iteration StepStats.

A `tf.function` call gives no RunMetadata, so the runtime captures a task
window's calls with TensorFlow's own profiler and stores its trace as it came
(``raw_format.task_record``, the xspace records). Decoding happens here,
offline: the profiler's stop stays cheap for the job, and a newer reader can
re-read old raw data.

The messages are declared from the field numbers of
``tsl/profiler/protobuf/xplane.proto`` (only the fields read here):

    XSpace         { repeated XPlane planes = 1; }
    XPlane         { int64 id = 1; string name = 2; repeated XLine lines = 3;
                     map<int64, XEventMetadata> event_metadata = 4; }
    XLine          { int64 id = 1; string name = 2; int64 timestamp_ns = 3;
                     repeated XEvent events = 4; }
    XEvent         { int64 metadata_id = 1; int64 offset_ps = 2; int64 duration_ps = 3; }
    XEventMetadata { int64 id = 1; string name = 2; }

On the host plane ("/host:CPU", host tracer level 3) each line is a thread,
and a kernel run is an event named "<op name>:<op type>"; the runtime's own
scopes ("ExecutorState::Process", "EagerLocalExecute: Timestamp") are not
kernels. ``tests/test_tf2_tasks.py`` holds this reading against
TensorFlow's own conversion of the same trace.

Times in the trace are the profiler's own clock; the step trace's stamps are
epoch µs read inside the graph. The offset between the two clocks comes from
the stamps themselves: each step-trace stamp is a ``Timestamp`` kernel in the
probe scope, so the trace holds its run, and the training trace holds the
value it read (``clock_marks``). The offset is the one that puts the most
probe kernel starts within ``MATCH_US`` of a stamp value (so a pairing with
the wrong iteration never wins), refined to the median of those pairs.
Measured on TF 2.15 `loop` windows (12 runs): the pairs agree to -1.0..+3.2 µs
of that median, save one preempted probe kernel in 3 of the 12 windows (+9.5 to
+23 µs, its value read late in a long run; the median ignores it).

Without stamps (``task_trace`` with ``training_trace`` off) the record's two
eager ``tf.timestamp()`` anchors place the clock: the value is read near the
end of the anchor's ``EagerKernelExecute`` run (measured 2.2-7.2 µs before
it), so the end of the shorter of the two runs is used (a preempted run is
long). The first anchor's run is 48-102 µs long on an idle machine and can be
milliseconds under load: its midpoint, used before, put the tasks 11-26 µs
late, and a whole call late under load (a window's first iteration then lost
its tasks to the next one).

A call's kernels are those that started between its call and its return.
"""
from __future__ import annotations

import bisect
import re
from dataclasses import dataclass
from typing import Any, Optional, Sequence

import numpy as np

from google.protobuf import descriptor_pb2

from npu_tf_profiling.raw_format import layout
from npu_tf_profiling.reports.step.records import pair_array, pair_counts
from npu_tf_profiling.reports.task import step_stats
from npu_tf_profiling.reports.task.declared_proto import F, add_field, add_map, message_classes

PACKAGE = "npu_tf_profiling.xplane"
HOST_PLANE = "/host:CPU"
CPU_DEVICE = "/job:localhost/replica:0/task:0/device:CPU:0"
# A step-trace stamp: a clock-reading kernel in the probe scope (the scope may be uniquified, `..._1`).
_PROBE_STAMP = re.compile(r"(?:^|/)npu_tf_profiling_probes(?:_\d+)?/[^/]+$")
STAMP_TYPES = frozenset({"Timestamp", "EagerPyFunc", "PyFunc"})  # tf.timestamp, or the host clock under op determinism
# A probe kernel's start and the value its stamp read agree within this (the read comes early in the kernel's run).
MATCH_US = 5.0
# How far from the anchors' estimate the stamps' offset is looked for: more than any anchor run measured under load.
SEARCH_US = 50_000.0


def file_descriptor_proto() -> descriptor_pb2.FileDescriptorProto:
    """The proto3 file declaring the XSpace messages the reports read."""
    fdp = descriptor_pb2.FileDescriptorProto(name="npu_tf_profiling/xplane.proto", package=PACKAGE, syntax="proto3")
    meta = fdp.message_type.add(name="XEventMetadata")
    add_field(meta, "id", 1, F.TYPE_INT64)
    add_field(meta, "name", 2, F.TYPE_STRING)
    event = fdp.message_type.add(name="XEvent")
    for name, number in (("metadata_id", 1), ("offset_ps", 2), ("duration_ps", 3)):
        add_field(event, name, number, F.TYPE_INT64)
    line = fdp.message_type.add(name="XLine")
    add_field(line, "id", 1, F.TYPE_INT64)
    add_field(line, "name", 2, F.TYPE_STRING)
    add_field(line, "timestamp_ns", 3, F.TYPE_INT64)
    add_field(line, "events", 4, F.TYPE_MESSAGE, F.LABEL_REPEATED, f".{PACKAGE}.XEvent")
    plane = fdp.message_type.add(name="XPlane")
    add_field(plane, "id", 1, F.TYPE_INT64)
    add_field(plane, "name", 2, F.TYPE_STRING)
    add_field(plane, "lines", 3, F.TYPE_MESSAGE, F.LABEL_REPEATED, f".{PACKAGE}.XLine")
    add_map(plane, f"{PACKAGE}.XPlane", "event_metadata", 4, F.TYPE_INT64, F.TYPE_MESSAGE, f".{PACKAGE}.XEventMetadata")
    space = fdp.message_type.add(name="XSpace")
    add_field(space, "planes", 1, F.TYPE_MESSAGE, F.LABEL_REPEATED, f".{PACKAGE}.XPlane")
    return fdp


(XSpace,) = message_classes(file_descriptor_proto(), "XSpace")


@dataclass(frozen=True)
class Kernel:
    """One kernel run on the host plane, in the trace's own clock (µs)."""

    start_us: float
    end_us: float
    name: str
    op_type: str
    thread: int


@dataclass(frozen=True)
class HostTrace:
    """The host plane's kernel runs (by start), the runs of the eager ``tf.timestamp()`` anchors, and the
    starts of the step-trace stamps' kernels (sorted)."""

    kernels: list[Kernel]
    stamps: list[tuple[float, float]]
    probe_starts: np.ndarray


def host_trace(payload: bytes) -> HostTrace:
    """Read the host plane of a serialized XSpace (``DecodeError`` on garbage)."""
    space = XSpace()
    space.ParseFromString(payload)
    kernels: list[Kernel] = []
    stamps: list[tuple[float, float]] = []
    for plane in space.planes:
        if plane.name != HOST_PLANE:
            continue
        labels = {key: meta.name for key, meta in plane.event_metadata.items()}
        for line in plane.lines:
            base_us = line.timestamp_ns / 1e3
            events = []
            for event in line.events:
                start = base_us + event.offset_ps / 1e6
                label = labels.get(event.metadata_id, "")
                name, _, kind = label.partition(":") if "::" not in label else (label, "", "")
                events.append((start, start + event.duration_ps / 1e6, name, kind.strip()))
            calls = [e for e in events if e[2] == "EagerLocalExecute" and e[3] == "Timestamp"]  # the anchors' calls
            runs = [e for e in events if e[2] == "EagerKernelExecute"]
            stamps += [r[:2] for c in calls for r in runs if c[0] <= r[0] and r[1] <= c[1]]
            kernels += [Kernel(*e, line.id) for e in events if e[3] and not e[2].startswith("Eager")]
    kernels.sort(key=lambda k: (k.start_us, k.end_us, k.name))
    probes = np.array([k.start_us for k in kernels if k.op_type in STAMP_TYPES and _PROBE_STAMP.search(k.name)], dtype=np.float64)
    return HostTrace(kernels, sorted(stamps), probes)


def anchor_offset(trace: HostTrace, anchors_us: list[float]) -> float:
    """The offset from the runtime's two eager anchors: the value against the end of the shorter kernel run.

    The script may run tf.timestamp() itself between them; the first and the last are the runtime's.
    """
    if len(trace.stamps) < 2 or len(anchors_us) < 2:
        raise ValueError(f"the trace holds {len(trace.stamps)} of the 2 clock anchors")
    pairs = zip((anchors_us[0], anchors_us[-1]), (trace.stamps[0], trace.stamps[-1]))
    value, (_, end) = min(pairs, key=lambda pair: pair[1][1] - pair[1][0])
    return value - end


def epoch_offset(trace: HostTrace, anchors_us: list[float], marks: Optional[np.ndarray] = None,
                 calls: Sequence[tuple[float, float]] = ()) -> float:
    """What to add to the trace's times to get epoch µs (see the module docstring).

    ``marks``: the step-trace stamp values (epoch µs, sorted) around the window, from ``clock_marks``;
    without any (or with no probe kernel in the trace) the anchors alone place the clock. ``calls``
    (start, end epoch µs) break a tie between equally dense pairings, which only a job whose iterations
    repeat to within MATCH_US has: the pairing one iteration off puts the edge calls' stamps outside every call.
    """
    coarse = anchor_offset(trace, anchors_us)
    if marks is None or marks.size == 0 or trace.probe_starts.size == 0:
        return coarse
    lo = np.searchsorted(marks, trace.probe_starts + coarse - SEARCH_US)
    hi = np.searchsorted(marks, trace.probe_starts + coarse + SEARCH_US)
    candidates = np.sort(np.concatenate([marks[a:b] - start for a, b, start in zip(lo, hi, trace.probe_starts)]))
    if candidates.size == 0:
        return coarse
    # The densest MATCH_US-wide runs of candidates: each probe kernel paired with its own stamp's value.
    counts = np.searchsorted(candidates, candidates + MATCH_US, side="right") - np.arange(candidates.size)
    offsets = [float(np.median(candidates[i:i + counts[i]])) for i in np.flatnonzero(counts == counts.max())]
    starts, ends = (np.array(sorted(column), dtype=np.float64) for column in zip(*calls)) if calls else (np.zeros(0),) * 2

    def probes_outside_calls(offset: float) -> int:
        epoch = trace.probe_starts + offset
        index = np.searchsorted(starts, epoch, side="right") - 1
        inside = (index >= 0) & (epoch <= ends[np.maximum(index, 0)]) if starts.size else np.zeros(epoch.size, dtype=bool)
        return int((~inside).sum())

    return min(offsets, key=lambda offset: (probes_outside_calls(offset), abs(offset - coarse)))


def clock_marks(frame: Any, around_us: tuple[float, float]) -> np.ndarray:
    """Every step-trace stamp value (epoch µs, sorted) of a training_trace frame within SEARCH_US of a window.

    ``frame`` is ``reports.step.records.TraceRead.frame``: the point columns, and the GetNext and Reduce pairs.
    """
    start, end = around_us[0] - SEARCH_US, around_us[1] + SEARCH_US
    near = frame[(frame[layout.K_ITERATION_END] >= start) & (frame[layout.K_ITERATION_END] <= end)]
    values = [near[column].to_numpy(dtype=np.float64) for column in (layout.K_FP_START, layout.K_BP_END, layout.K_ITERATION_END)]
    for kind in (layout.K_GET_NEXT, layout.K_REDUCE):
        width = int(pair_counts(near, kind).max()) if len(near) else 0
        values.append(pair_array(near, kind, width).ravel())
    marks = np.concatenate(values)
    return np.sort(marks[np.isfinite(marks)])


def calls_step_stats(payload: bytes, anchors_us: list[float], calls: list[tuple[float, float]],
                     marks: Optional[np.ndarray] = None) -> list[Any]:
    """Per call (its start and end, epoch µs): its kernels as a StepStats message, epoch times, as FULL_TRACE gives them.

    ``marks`` (``clock_marks``) align the trace's clock to the step trace's; see ``epoch_offset``.
    """
    trace = host_trace(payload)
    offset = epoch_offset(trace, anchors_us, marks, calls)
    starts = [k.start_us + offset for k in trace.kernels]
    out = []
    for start, end in calls:
        stats = step_stats.StepStats()
        device = stats.dev_stats.add(device=CPU_DEVICE)
        for kernel in trace.kernels[bisect.bisect_left(starts, start):bisect.bisect_right(starts, end)]:
            start_ns = int(round((kernel.start_us + offset) * 1e3))
            duration_ns = int(round((kernel.end_us - kernel.start_us) * 1e3))
            device.node_stats.add(
                node_name=kernel.name, timeline_label=f"{kernel.name} = {kernel.op_type}()",
                thread_id=kernel.thread & 0xFFFFFFFF, all_start_micros=start_ns // 1000, all_start_nanos=start_ns,
                op_end_rel_micros=duration_ns // 1000, op_end_rel_nanos=duration_ns,
                all_end_rel_micros=duration_ns // 1000, all_end_rel_nanos=duration_ns,
            )
        out.append(stats)
    return out
