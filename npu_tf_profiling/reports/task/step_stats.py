"""TensorFlow ``StepStats`` messages without TensorFlow: a descriptor declared in code.

The runtime stores each traced iteration's ``RunMetadata.step_stats`` as the
serialized protobuf (see ``layout``). The reports must never import
TensorFlow, so this module rebuilds the three message classes it needs with
the ``protobuf`` package alone, from a ``FileDescriptorProto`` that uses the
field numbers of ``tensorflow/core/framework/step_stats.proto``:

    StepStats       { repeated DeviceStepStats dev_stats = 1; }
    DeviceStepStats { string device = 1; repeated NodeExecStats node_stats = 2;
                      map<uint32, string> thread_names = 3; }
    NodeExecStats   { string node_name = 1; int64 all_start_micros = 2;
                      int64 op_start_rel_micros = 3; int64 op_end_rel_micros = 4;
                      int64 all_end_rel_micros = 5; string timeline_label = 8;
                      int64 scheduled_micros = 9; uint32 thread_id = 10;
                      int64 all_start_nanos = 13; int64 op_start_rel_nanos = 14;
                      int64 op_end_rel_nanos = 15; int64 all_end_rel_nanos = 16;
                      int64 scheduled_nanos = 17; }

The fields left out (memory, output, referenced_tensor, memory_stats) are
unknown to these classes; protobuf skips them when parsing, so real
FULL_TRACE payloads decode as-is (``tests/test_task_step_stats.py`` checks
this against TensorFlow's own classes).

The classes come from ``declared_proto`` (a private descriptor pool), so they
never clash with TensorFlow's ``tensorflow.StepStats`` in one process.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from google.protobuf import descriptor_pb2

from npu_tf_profiling.reports.task.declared_proto import F, add_field, add_map, message_classes

PACKAGE = "npu_tf_profiling.step_stats"
_FILE_NAME = "npu_tf_profiling/step_stats.proto"

# (name, number, type)
_NODE_FIELDS = (
    ("node_name", 1, F.TYPE_STRING),
    ("all_start_micros", 2, F.TYPE_INT64),
    ("op_start_rel_micros", 3, F.TYPE_INT64),
    ("op_end_rel_micros", 4, F.TYPE_INT64),
    ("all_end_rel_micros", 5, F.TYPE_INT64),
    ("timeline_label", 8, F.TYPE_STRING),
    ("scheduled_micros", 9, F.TYPE_INT64),
    ("thread_id", 10, F.TYPE_UINT32),
    ("all_start_nanos", 13, F.TYPE_INT64),
    ("op_start_rel_nanos", 14, F.TYPE_INT64),
    ("op_end_rel_nanos", 15, F.TYPE_INT64),
    ("all_end_rel_nanos", 16, F.TYPE_INT64),
    ("scheduled_nanos", 17, F.TYPE_INT64),
)


def file_descriptor_proto() -> descriptor_pb2.FileDescriptorProto:
    """The proto3 file declaring StepStats, DeviceStepStats and NodeExecStats."""
    fdp = descriptor_pb2.FileDescriptorProto(name=_FILE_NAME, package=PACKAGE, syntax="proto3")

    node = fdp.message_type.add(name="NodeExecStats")
    for name, number, ftype in _NODE_FIELDS:
        add_field(node, name, number, ftype)

    dev = fdp.message_type.add(name="DeviceStepStats")
    add_field(dev, "device", 1, F.TYPE_STRING)
    add_field(dev, "node_stats", 2, F.TYPE_MESSAGE, F.LABEL_REPEATED, f".{PACKAGE}.NodeExecStats")
    add_map(dev, f"{PACKAGE}.DeviceStepStats", "thread_names", 3, F.TYPE_UINT32, F.TYPE_STRING)

    top = fdp.message_type.add(name="StepStats")
    add_field(top, "dev_stats", 1, F.TYPE_MESSAGE, F.LABEL_REPEATED, f".{PACKAGE}.DeviceStepStats")
    return fdp


StepStats, DeviceStepStats, NodeExecStats = message_classes(file_descriptor_proto(), "StepStats", "DeviceStepStats", "NodeExecStats")


def parse_step_stats(payload: bytes) -> Any:
    """Decode one serialized StepStats; raises ``google.protobuf.message.DecodeError`` on garbage."""
    message = StepStats()
    message.ParseFromString(payload)
    return message


@dataclass
class DeviceNodes:
    """The nodes of one ``DeviceStepStats`` as columns (one entry per node, in file order).

    Times are integer **nanoseconds since the Unix epoch**: from the ``*_nanos``
    fields when the node has them (TensorFlow >= 2.2 fills both; a node whose
    ``all_start_nanos`` is 0 is taken to have none), else the ``*_micros``
    fields times 1000. ``end_ns`` = all_start + all_end_rel: the span
    TensorFlow's own timeline draws for the op.
    """

    device: str
    name_code: np.ndarray  # int32, index into the caller's name table
    start_ns: np.ndarray  # int64
    end_ns: np.ndarray  # int64
    thread_id: np.ndarray  # int64
    thread_names: dict[int, str]
    new_names: list[tuple[int, int]]  # (code, node index) of names first seen in this device
    nodes: Any  # the repeated NodeExecStats container, for lazy access (timeline_label)


def device_nodes(dev: Any, name_codes: dict[str, int]) -> DeviceNodes:
    """Extract the columns of one DeviceStepStats: the per-node hot loop of the reports.

    Node names are interned into ``name_codes`` (name -> code, codes handed out
    in order), so millions of tasks cost one small integer each instead of a
    string; ``new_names`` says which codes this call created and where, so the
    caller can read those nodes' ``timeline_label`` (only those).
    """
    nodes = dev.node_stats
    get = name_codes.get
    flat: list[int] = []
    extend = flat.extend
    new_names: list[tuple[int, int]] = []
    for index, node in enumerate(nodes):
        name = node.node_name
        code = get(name)
        if code is None:
            code = name_codes[name] = len(name_codes)
            new_names.append((code, index))
        extend((code, node.all_start_nanos, node.all_end_rel_nanos, node.thread_id))
    table = np.fromiter(flat, dtype=np.int64, count=len(flat)).reshape(-1, 4)
    code, start, end_rel, thread = (np.ascontiguousarray(c) for c in table.T)
    no_nanos = np.flatnonzero(start == 0)
    if len(no_nanos):  # older writers: microseconds only (read for those nodes alone)
        micros = np.array([(nodes[i].all_start_micros, nodes[i].all_end_rel_micros) for i in no_nanos.tolist()], dtype=np.int64)
        start[no_nanos] = micros[:, 0] * 1000
        end_rel[no_nanos] = micros[:, 1] * 1000
    return DeviceNodes(
        device=dev.device,
        name_code=code.astype(np.int32),
        start_ns=start,
        end_ns=start + end_rel,
        thread_id=thread,
        thread_names=dict(dev.thread_names),
        new_names=new_names,
        nodes=nodes,
    )
