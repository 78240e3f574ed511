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

Times in the trace are the profiler's own clock. The record carries the eager
``tf.timestamp()`` values the runtime took at the window's start and stop;
the trace holds those kernels' runs, so the offset to the epoch is their
difference (good to half a kernel run, a few µs). A call's kernels are those
that started between its call and its return.
"""
from __future__ import annotations

import bisect
import statistics
from dataclasses import dataclass
from typing import Any

from google.protobuf import descriptor_pb2

from npu_tf_profiling.reports.task import step_stats
from npu_tf_profiling.reports.task.declared_proto import F, add_field, add_map, message_classes

PACKAGE = "npu_tf_profiling.xplane"
HOST_PLANE = "/host:CPU"
CPU_DEVICE = "/job:localhost/replica:0/task:0/device:CPU:0"


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
    """The host plane's kernel runs (by start), and the runs of the eager ``tf.timestamp()`` kernels."""

    kernels: list[Kernel]
    stamps: list[tuple[float, float]]


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
    return HostTrace(kernels, sorted(stamps))


def epoch_offset(trace: HostTrace, anchors_us: list[float]) -> float:
    """What to add to the trace's times to get epoch µs: the anchors against the first and last stamp runs.

    The script may run tf.timestamp() itself between them; the first and the last are the runtime's.
    """
    if len(trace.stamps) < 2 or len(anchors_us) < 2:
        raise ValueError(f"the trace holds {len(trace.stamps)} of the 2 clock anchors")
    pairs = zip((anchors_us[0], anchors_us[-1]), (trace.stamps[0], trace.stamps[-1]))
    return statistics.median(value - (start + end) / 2 for value, (start, end) in pairs)


def calls_step_stats(payload: bytes, anchors_us: list[float], calls: list[tuple[float, float]]) -> list[Any]:
    """Per call (its start and end, epoch µs): its kernels as a StepStats message, epoch times, as FULL_TRACE gives them."""
    trace = host_trace(payload)
    offset = epoch_offset(trace, anchors_us)
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
