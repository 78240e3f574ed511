"""task_trace.bin records, both directions: framing on write, unframing (tolerant of damage) on read.

A record is ``TASK_MAGIC | uint32 LE header length | header (UTF-8 JSON) |
uint64 LE payload length | payload (a serialized StepStats)``, one per traced
iteration (``docs/output_format.md``). The reader never trusts the end of the
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
from typing import Any, Iterator, Union

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


def frame_task_record(header: dict[str, Any], payload: bytes) -> bytes:
    """One record, written by the runtime with a single ``os.write`` so a crash can only tear the last one."""
    head = json.dumps(header, separators=(",", ":")).encode("utf-8")
    return b"".join((layout.TASK_MAGIC, _HEADER.pack(len(head)), head, _PAYLOAD.pack(len(payload)), payload))


def iter_framed_records(path: Union[Path, str]) -> Iterator[Union[FramedRecord, SkippedRecord]]:
    """Yield each record of a task_trace.bin in file order, or a ``SkippedRecord`` for what is unusable.

    The file is memory-mapped, so a multi-GB file costs one payload at a time.
    """
    path = Path(path)
    size = path.stat().st_size
    if size == 0:
        return
    magic = layout.TASK_MAGIC
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
                header = parse_header(mm[head_start:head_end])
            except BadRecordError as exc:
                yield SkippedRecord(pos, f"not a task_trace record header: {exc}")
            else:
                yield FramedRecord(pos, header, mm[payload_start:payload_end])
            pos = payload_end
