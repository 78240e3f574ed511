"""task_trace capture: TensorFlow's own per-op step stats, on scheduled iterations only.

`RunOptions(FULL_TRACE)` is what TensorFlow offers for per-op timing, and it is
expensive (+144% to +368% per step here), so it is switched on only for the
iterations the collection window selects; every other iteration pays nothing.
The StepStats are stored raw (serialized protobuf, one framed record per
iteration, see `raw_format.task_record`) and decoded offline by `reports`, so the training
process does no analysis work. The step stats use the same wall clock as the
step-trace probes, so tasks and step trace line up on one timeline.
"""
from __future__ import annotations

from typing import Any

from tensorflow.core.protobuf import config_pb2



_FULL_TRACE = config_pb2.RunOptions(trace_level=config_pb2.RunOptions.FULL_TRACE)


def full_trace_options(user_options: Any) -> config_pb2.RunOptions:
    """The user's RunOptions (a copy) with FULL_TRACE; everything else they asked for is kept."""
    if user_options is None:
        return _FULL_TRACE
    options = config_pb2.RunOptions()
    options.CopyFrom(user_options)
    options.trace_level = config_pb2.RunOptions.FULL_TRACE
    return options


class RawRunMetadata:
    """Stands in for a RunMetadata proto in `Session.run` and keeps the serialized bytes.

    `Session.run` only tests the object for truth and calls `ParseFromString` with
    the bytes TensorFlow produced. Keeping those bytes saves parsing them into a
    Python proto and serializing them again (milliseconds on a 5k-op graph). A
    caller's own RunMetadata still gets filled, exactly as TensorFlow would.
    """

    def __init__(self, user_metadata: Any = None) -> None:
        self.user_metadata = user_metadata
        self.data = b""

    def __bool__(self) -> bool:
        return True

    def ParseFromString(self, data: bytes) -> int:
        self.data = bytes(data)
        if self.user_metadata is not None:
            self.user_metadata.ParseFromString(self.data)
        return len(self.data)

    def step_stats_bytes(self) -> bytes:
        """The StepStats field of the RunMetadata bytes, still serialized (no Python proto built)."""
        return extract_field(self.data, RUN_METADATA_STEP_STATS_FIELD)


# RunMetadata.step_stats is field 1 (tensorflow/core/protobuf/config.proto).
RUN_METADATA_STEP_STATS_FIELD = 1


def _varint(data: bytes, at: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        byte = data[at]
        at += 1
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value, at
        shift += 7


def extract_field(message: bytes, field_number: int) -> bytes:
    """The payload of a length-delimited field in serialized protobuf bytes (b"" if absent).

    Walks only the top-level tags: a few steps for a RunMetadata, whatever its size.
    """
    at = 0
    while at < len(message):
        key, at = _varint(message, at)
        number, wire = key >> 3, key & 7
        if wire == 2:
            length, at = _varint(message, at)
            if number == field_number:
                return message[at : at + length]
            at += length
        elif wire == 0:
            _, at = _varint(message, at)
        elif wire == 1:
            at += 8
        elif wire == 5:
            at += 4
        else:
            raise ValueError(f"unsupported protobuf wire type {wire}")
    return b""
