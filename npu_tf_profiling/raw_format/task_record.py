"""task_trace records, both directions: framing on write, unframing (tolerant of damage) on read.

Two files share the framing ``MAGIC | uint32 LE header length | header (UTF-8 JSON) |
uint64 LE payload length | payload`` (``docs/output_format.md``):
- ``task_trace.bin`` (TASK_MAGIC): one record per traced iteration, the payload a
  serialized StepStats (a Session's FULL_TRACE run);
- ``task_xspace.bin`` (XSPACE_MAGIC): one record per TensorFlow 2 task window, the
  payload ``tf.profiler``'s XSpace as it came, the header the window's calls (each
  a task_trace header) and the two clock anchors. The reader never trusts the end of the
file: a torn last record, bytes without the marker and a header that breaks the
contract are each yielded as a ``SkippedRecord`` with its byte offset, and
reading resumes at the next marker.
"""
from __future__ import annotations

import json
import mmap
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Union

from npu_tf_profiling.raw_format import layout
from npu_tf_profiling.raw_format.errors import BadRecordError
from npu_tf_profiling.raw_format.training_record import optional_int, optional_time

_HEADER = struct.Struct("<I")
_PAYLOAD = struct.Struct("<Q")


@dataclass(frozen=True)
class SkippedRecord:
    """A part of task_trace.bin that could not be used, and why."""

    offset: int
    reason: str


@dataclass(frozen=True)
class FramedRecord:
    offset: int
    header: dict[str, Any]
    payload: bytes


def parse_header(raw: bytes) -> dict[str, Any]:
    """Check a record header against the contract; return a clean dict (ValueError if not)."""
    try:
        obj = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BadRecordError(f"header is not UTF-8 JSON ({exc.__class__.__name__})") from None
    if not isinstance(obj, dict):
        raise BadRecordError("header is not a JSON object")
    return {
        layout.K_MODEL_ID: optional_int(obj, layout.K_MODEL_ID, required=True),
        layout.K_RUN: optional_int(obj, layout.K_RUN, required=True),
        layout.K_STEP: optional_int(obj, layout.K_STEP, required=False),
        layout.K_RUN_START: optional_time(obj, layout.K_RUN_START),
        layout.K_RUN_END: optional_time(obj, layout.K_RUN_END),
    }


def parse_xspace_header(raw: bytes) -> dict[str, Any]:
    """An xspace record's header: {"anchors_us": [float, float], "calls": [task_trace header, ...]}."""
    try:
        obj = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise BadRecordError(f"header is not UTF-8 JSON ({exc.__class__.__name__})") from None
    anchors = obj.get(layout.K_ANCHORS) if isinstance(obj, dict) else None
    calls = obj.get(layout.K_CALLS) if isinstance(obj, dict) else None
    if not (isinstance(anchors, list) and len(anchors) == 2 and all(isinstance(a, (int, float)) for a in anchors)):
        raise BadRecordError(f"'{layout.K_ANCHORS}' is not a list of two times")
    if not isinstance(calls, list):
        raise BadRecordError(f"'{layout.K_CALLS}' is not a list")
    return {layout.K_ANCHORS: [float(a) for a in anchors],
            layout.K_CALLS: [parse_header(json.dumps(call).encode("utf-8")) for call in calls]}


def frame_task_record(header: dict[str, Any], payload: bytes, magic: bytes = layout.TASK_MAGIC) -> bytes:
    """One record, written by the runtime with a single ``os.write`` so a crash can only tear the last one."""
    head = json.dumps(header, separators=(",", ":")).encode("utf-8")
    return b"".join((magic, _HEADER.pack(len(head)), head, _PAYLOAD.pack(len(payload)), payload))


def iter_framed_records(
    path: Union[Path, str], magic: bytes = layout.TASK_MAGIC, parse: Callable[[bytes], dict[str, Any]] = parse_header,
) -> Iterator[Union[FramedRecord, SkippedRecord]]:
    """Yield each record of a framed file in file order, or a ``SkippedRecord`` for what is unusable.

    `magic` and `parse` say which of the two files it is (task_trace.bin by default).
    The file is memory-mapped, so a multi-GB file costs one payload at a time.
    """
    path = Path(path)
    size = path.stat().st_size
    if size == 0:
        return
    with open(path, "rb") as handle, mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ) as mm:
        pos = 0
        while pos < size:
            if mm[pos : pos + len(magic)] != magic:
                nxt = mm.find(magic, pos + 1)
                if nxt < 0:
                    tail = mm[pos:size]
                    if len(tail) < len(magic) and magic.startswith(tail):
                        yield SkippedRecord(pos, "incomplete last record (the writer was probably stopped mid-write)")
                    else:
                        yield SkippedRecord(pos, f"{size - pos} trailing byte(s) without a record marker")
                    return
                yield SkippedRecord(pos, f"{nxt - pos} byte(s) without a record marker; resumed at the next marker (offset {nxt})")
                pos = nxt
                continue
            head_start = pos + len(magic) + _HEADER.size
            head_end = payload_start = payload_end = -1
            if head_start <= size:
                head_end = head_start + _HEADER.unpack_from(mm, pos + len(magic))[0]
            if 0 <= head_end and head_end + _PAYLOAD.size <= size:
                payload_start = head_end + _PAYLOAD.size
                payload_end = payload_start + _PAYLOAD.unpack_from(mm, head_end)[0]
            if payload_end < 0 or payload_end > size:
                nxt = mm.find(magic, pos + 1)
                if nxt < 0:
                    yield SkippedRecord(pos, "incomplete last record (the writer was probably stopped mid-write)")
                    return
                yield SkippedRecord(pos, f"record lengths run past the next marker; resumed at offset {nxt}")
                pos = nxt
                continue
            try:
                header = parse(mm[head_start:head_end])
            except BadRecordError as exc:
                yield SkippedRecord(pos, f"not a task_trace record header: {exc}")
            else:
                yield FramedRecord(pos, header, mm[payload_start:payload_end])
            pos = payload_end
