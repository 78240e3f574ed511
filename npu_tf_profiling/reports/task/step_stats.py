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

The classes live in a private descriptor pool under their own package name,
so they never clash with TensorFlow's ``tensorflow.StepStats`` when both are
loaded in one process (tests, the benchmark).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

PACKAGE = "npu_tf_profiling.step_stats"
_FILE_NAME = "npu_tf_profiling/step_stats.proto"

_F = descriptor_pb2.FieldDescriptorProto
# (name, number, type, label, type_name)
_NODE_FIELDS = (
    ("node_name", 1, _F.TYPE_STRING),
    ("all_start_micros", 2, _F.TYPE_INT64),
    ("op_start_rel_micros", 3, _F.TYPE_INT64),
    ("op_end_rel_micros", 4, _F.TYPE_INT64),
    ("all_end_rel_micros", 5, _F.TYPE_INT64),
    ("timeline_label", 8, _F.TYPE_STRING),
    ("scheduled_micros", 9, _F.TYPE_INT64),
    ("thread_id", 10, _F.TYPE_UINT32),
    ("all_start_nanos", 13, _F.TYPE_INT64),
    ("op_start_rel_nanos", 14, _F.TYPE_INT64),
    ("op_end_rel_nanos", 15, _F.TYPE_INT64),
    ("all_end_rel_nanos", 16, _F.TYPE_INT64),
    ("scheduled_nanos", 17, _F.TYPE_INT64),
)


def _field(message: Any, name: str, number: int, ftype: int, label: int = _F.LABEL_OPTIONAL, type_name: str = "") -> None:
    field = message.field.add()
    field.name = name
    field.number = number
    field.type = ftype
    field.label = label
    if type_name:
        field.type_name = type_name


def file_descriptor_proto() -> descriptor_pb2.FileDescriptorProto:
    """The proto3 file declaring StepStats, DeviceStepStats and NodeExecStats."""
    fdp = descriptor_pb2.FileDescriptorProto(name=_FILE_NAME, package=PACKAGE, syntax="proto3")

    node = fdp.message_type.add(name="NodeExecStats")
    for name, number, ftype in _NODE_FIELDS:
        _field(node, name, number, ftype)

    dev = fdp.message_type.add(name="DeviceStepStats")
    _field(dev, "device", 1, _F.TYPE_STRING)
    _field(dev, "node_stats", 2, _F.TYPE_MESSAGE, _F.LABEL_REPEATED, f".{PACKAGE}.NodeExecStats")
    entry = dev.nested_type.add(name="ThreadNamesEntry")
    entry.options.map_entry = True
    _field(entry, "key", 1, _F.TYPE_UINT32)
    _field(entry, "value", 2, _F.TYPE_STRING)
    _field(dev, "thread_names", 3, _F.TYPE_MESSAGE, _F.LABEL_REPEATED, f".{PACKAGE}.DeviceStepStats.ThreadNamesEntry")

    top = fdp.message_type.add(name="StepStats")
    _field(top, "dev_stats", 1, _F.TYPE_MESSAGE, _F.LABEL_REPEATED, f".{PACKAGE}.DeviceStepStats")
    return fdp


def _message_classes() -> tuple[type, type, type]:
    pool = descriptor_pool.DescriptorPool()
    pool.Add(file_descriptor_proto())

    def cls(name: str) -> type:
        desc = pool.FindMessageTypeByName(f"{PACKAGE}.{name}")
        get = getattr(message_factory, "GetMessageClass", None)
        if get is not None:  # protobuf >= 4.21
            return get(desc)
        return message_factory.MessageFactory(pool).GetPrototype(desc)  # pragma: no cover - old protobuf

    return cls("StepStats"), cls("DeviceStepStats"), cls("NodeExecStats")


StepStats, DeviceStepStats, NodeExecStats = _message_classes()


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
