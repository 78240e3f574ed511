"""training_trace.bin: step-trace records as fixed-width binary rows in framed batches, both directions.

The runtime records every iteration in an in-graph ring buffer and drains it in
batches (``docs/output_format.md``), so records arrive many at a time. A batch is
written as one frame with a single ``os.write``: a fixed header, then ``rows``
fixed-width rows (a NumPy structured array, little-endian). Encoding is one
``tobytes``; decoding is one ``frombuffer`` per frame, with no per-record text
parsing. The older one-JSON-line-per-iteration format (``training_record``)
stays readable.

A crash can only tear the last frame: the reader keeps the whole rows in it and
reports the rest. A whole frame carries the CRC-32 of its rows: a frame damaged
in place is reported and left out (binary rows have no syntax that could show
it). Bytes that do not start with the frame marker are reported with their
offset and reading resumes at the next marker.
"""
from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass
from typing import Iterator

import numpy as np

FRAME_MAGIC = b"NTS1"
# magic, model_id, rows, get_next pairs, reduce pairs, flags (bit 0 fp, bit 1 bp, bit 2 step), 3 pad bytes, CRC-32 of the rows
_HEADER = struct.Struct("<4sIIHHB3xI")
HEADER_SIZE = _HEADER.size
_FLAG_FP, _FLAG_BP, _FLAG_STEP = 1, 2, 4
# `step` of a row whose graph has no global step.
NO_STEP = np.iinfo(np.int64).min
# The most start/end pairs a row carries: the runtime stamps at most this many data inputs, and
# times the all-reduce groups past MAX_REDUCE_PAIRS - 1 as one (graph_points.collectives). A frame
# claiming more is crafted or damaged: its rows are read, the pairs past these left out, with a warning.
MAX_GET_NEXT_PAIRS = 64
MAX_REDUCE_PAIRS = 1024
# A time outside [1970, 2100) in µs since the epoch is no clock reading; readers leave it out, with a warning.
PLAUSIBLE_US = (0.0, 4_102_444_800_000_000.0)


@dataclass(frozen=True)
class RecordShape:
    """Which points one graph's records carry; fixes the row width.

    The row's times, in µs since the epoch (NaN: not measured), are in this order:
    ``get_next start/end pairs..., fp_start?, bp_end?, reduce start/end pairs..., iteration_end``.
    """

    get_next_pairs: int
    has_fp: bool
    has_bp: bool
    reduce_pairs: int
    has_step: bool

    @property
    def times(self) -> int:
        return 2 * self.get_next_pairs + self.has_fp + self.has_bp + 2 * self.reduce_pairs + 1

    @property
    def dtype(self) -> np.dtype:
        return np.dtype([("run", "<i8"), ("step", "<i8"), ("times", "<f8", (self.times,))])

    @property
    def flags(self) -> int:
        return _FLAG_FP * self.has_fp | _FLAG_BP * self.has_bp | _FLAG_STEP * self.has_step

    @classmethod
    def from_header(cls, get_next_pairs: int, reduce_pairs: int, flags: int) -> "RecordShape":
        return cls(get_next_pairs, bool(flags & _FLAG_FP), bool(flags & _FLAG_BP), reduce_pairs, bool(flags & _FLAG_STEP))


def encode_frame(model_id: int, shape: RecordShape, rows: np.ndarray) -> bytes:
    """One frame: the header and `rows` (a structured array of `shape.dtype`)."""
    if rows.dtype != shape.dtype:
        raise ValueError(f"rows have dtype {rows.dtype}, expected {shape.dtype}")
    body = rows.tobytes()
    head = _HEADER.pack(FRAME_MAGIC, model_id, len(rows), shape.get_next_pairs, shape.reduce_pairs, shape.flags, zlib.crc32(body))
    return head + body


@dataclass(frozen=True)
class Frame:
    """One decoded frame; `first_record` is the 1-based number of its first row in the file."""

    offset: int
    model_id: int
    shape: RecordShape
    rows: np.ndarray
    first_record: int


@dataclass(frozen=True)
class DamagedBytes:
    """A part of the file that could not be used: where, and why."""

    offset: int
    record: int  # the 1-based number the next readable record would have had
    reason: str


def decode_frames(data: bytes) -> Iterator[Frame | DamagedBytes]:
    """Every frame of a training_trace.bin, in file order, with the damaged parts in between.

    A torn last frame yields its whole rows and then a `DamagedBytes` for the rest.
    """
    offset = record = 0
    end = len(data)
    while offset < end:
        if data[offset : offset + 4] != FRAME_MAGIC:
            resume = data.find(FRAME_MAGIC, offset + 1)
            resume = end if resume < 0 else resume
            yield DamagedBytes(offset, record + 1, f"{resume - offset} byte(s) without a frame marker")
            offset = resume
            continue
        if end - offset < HEADER_SIZE:
            yield DamagedBytes(offset, record + 1, "incomplete last frame header (the writer was probably stopped mid-write)")
            return
        _, model_id, count, get_next_pairs, reduce_pairs, flags, crc = _HEADER.unpack_from(data, offset)
        shape = RecordShape.from_header(get_next_pairs, reduce_pairs, flags)
        width = shape.dtype.itemsize
        body = offset + HEADER_SIZE
        limit = end
        if body + count * width > end:  # torn, or a damaged count: never read into a later frame
            following = data.find(FRAME_MAGIC, body)
            limit = end if following < 0 else following
        whole = min(count, (limit - body) // width)
        rows = np.frombuffer(data, dtype=shape.dtype, count=whole, offset=body)
        if whole == count and zlib.crc32(data[body : body + whole * width]) != crc:
            yield DamagedBytes(offset, record + 1, f"frame damaged (checksum mismatch): its {count} record(s) left out")
        elif whole:  # a torn frame's whole rows are kept: tearing is how a killed writer leaves it
            yield Frame(offset, model_id, shape, rows, record + 1)
        record += whole
        offset = body + whole * width
        if whole < count:
            last = limit == end
            why = "the writer was probably stopped mid-write" if last else "the frame is damaged"
            yield DamagedBytes(offset, record + 1, f"{'incomplete last' if last else 'short'} frame: {count - whole} of its {count} record(s) missing ({why})")
            offset = limit
