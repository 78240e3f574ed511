"""task_trace capture: TensorFlow's own per-op step stats, on scheduled iterations only.

`RunOptions(FULL_TRACE)` is what TensorFlow offers for per-op timing, and it is
expensive (+144% to +368% per step here), so it is switched on only for the
iterations the collection window selects; every other iteration pays nothing.
The StepStats are stored raw (serialized protobuf, one framed record per
iteration, see `layout`) and decoded offline by `reports`, so the training
process does no analysis work. The step stats use the same wall clock as the
step-trace probes, so tasks and step trace line up on one timeline.
"""
from __future__ import annotations

import json
import struct
from typing import Any

from tensorflow.core.protobuf import config_pb2

from npu_tf_profiling import layout


def full_trace_options(user_options: Any) -> config_pb2.RunOptions:
    """The user's RunOptions (a copy) with FULL_TRACE; everything else they asked for is kept."""
    options = config_pb2.RunOptions()
    if user_options is not None:
        options.CopyFrom(user_options)
    options.trace_level = config_pb2.RunOptions.FULL_TRACE
    return options


def frame_task_record(header: dict[str, Any], step_stats: bytes) -> bytes:
    """One task_trace.bin record: magic | u32 header length | header JSON | u64 payload length | payload."""
    head = json.dumps(header, separators=(",", ":")).encode("utf-8")
    return b"".join(
        (layout.TASK_MAGIC, struct.pack("<I", len(head)), head, struct.pack("<Q", len(step_stats)), step_stats)
    )
