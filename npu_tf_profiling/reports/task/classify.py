"""Which StepStats nodes are tasks, and of which kind (no TensorFlow).

Which nodes become tasks (``is_reported_name``):

* a node whose name starts with ``_`` is executor plumbing and is skipped:
  ``_SOURCE``, ``_SINK``, the feed/fetch nodes ``_arg_*``/``_retval_*``
  (``_recv_*``/``_send_*`` in older graphs) and partitioning's ``_Send``/
  ``_Recv``. TensorFlow rejects user op names that start with ``_``, so the
  rule never hides a user op;
* a node whose name starts with ``npu_tf_profiling_probes/`` is one of the
  profiler's own timestamp probes and is skipped;
* when a GPU's ``.../stream:all`` device is recorded beside its per-stream
  devices it repeats their kernels, so it is skipped (kept if it is the only one).

Each skipped kind is counted (``TaskTable.skipped``) and the reports say how many.
"""
from __future__ import annotations

import re
from typing import Optional

from npu_tf_profiling.raw_format import layout
from npu_tf_profiling.raw_format.run_info import RunInfo

PROBE_PREFIX = f"{layout.PROBE_SCOPE}/"
PLUMBING_PREFIX = "_"

TASK_CPU = "CPU"
TASK_GPU = "GPU kernel"
TASK_HOST_CPU = "host CPU"
TASK_COMMUNICATION = "communication"
TASK_TYPES = (TASK_CPU, TASK_GPU, TASK_HOST_CPU, TASK_COMMUNICATION)
COMMUNICATION_PREFIXES = ("Collective", "Nccl", "Horovod", "Hcom")
UNKNOWN_OP_TYPE = "unknown"

# Skipped-node kinds, as counted in TaskTable.skipped.
SKIP_PLUMBING = "executor nodes (names starting with '_')"
SKIP_PROBES = f"profiler probe ops ('{PROBE_PREFIX}*')"
SKIP_STREAM_ALL = "GPU '/stream:all' copies of per-stream kernels"
SKIP_HOST_CPU = "host CPU ops (aicpu is not 'on')"



def is_reported_name(name: str) -> bool:
    """Whether a StepStats node of this name is a task in the reports (see module doc)."""
    return not (name.startswith(PLUMBING_PREFIX) or name.startswith(PROBE_PREFIX))


def is_gpu_device(device: str) -> bool:
    return "GPU" in device or "/stream:" in device or "/memcpy" in device


def is_communication_type(op_type: str) -> bool:
    return op_type.startswith(COMMUNICATION_PREFIXES)


STREAM_DEVICE = re.compile(r"/stream:(\d+)")  # a GPU stream device; group 1 is the stream id
_DEVICE = re.compile(r"device:(.*)$")


def short_device(device: str) -> str:
    """``/job:localhost/replica:0/task:0/device:CPU:0`` -> ``CPU:0`` (others unchanged)."""
    match = _DEVICE.search(device)
    return match.group(1) if match else device


def op_type_from_label(label: str, name: str) -> Optional[str]:
    """The op type in a StepStats ``timeline_label``, or None.

    CPU/GPU op labels read ``name = Type(input, ...)`` (TensorFlow's timeline
    parses them the same way); GPU tracer kernel labels carry ``@@name:Type#``.
    """
    at = label.find("@@")
    if at >= 0:
        hash_at = label.find("#", at)
        fields = label[at + 2 : hash_at if hash_at > at else None].split(":")
        return fields[1] if len(fields) > 1 and fields[1] else None
    prefix = f"{name} = "
    rest = label[len(prefix) :] if label.startswith(prefix) else label.partition(" = ")[2]
    paren = rest.find("(")
    if paren <= 0:
        return None
    return rest[:paren].strip() or None


def aicpu_enabled(info: RunInfo) -> bool:
    """Whether host CPU ops are reported: info.json's resolved options have ``aicpu`` on.

    When info.json holds no options (missing or damaged file) nothing is known
    to be off, so they are reported.
    """
    options = info.options
    return not options or options.get("aicpu") == "on"
