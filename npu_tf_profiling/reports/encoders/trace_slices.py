"""Write a Chrome-trace timeline in bounded memory, sliced as CANN slices its own when it is too big.

Why: Chrome tracing fails above roughly 256-800 MB of JSON and Perfetto's UI
holds about 2 GB, so a long run's timeline must come in parts that each open.
CANN's ``msprof_slice.json`` sets the rule this module follows: a timeline no
larger than the slice size is one file (``<name>.json``, never sliced); a
larger one becomes ``<stem>_slice_<n>_<timestamp>.json``, n = 0, 1, ... in
time order, each at most the slice size (default 200 MiB: CANN's smallest
``slice_file_size``, which keeps every slice under the 256 MB a viewer opens).

The caller describes its timeline as **rows** (iterations, steps: the units a
slice may not cut) and **sections** (one per kind of event, in the order the
events are to appear, e.g. all Iteration spans, then all phase spans). A
section is a function ``encode(lo, hi) -> list[str]``: for rows ``lo..hi-1``,
one string per row holding that row's events of this kind as compact JSON
objects joined by ``,`` (``""`` where the row has none). ``metadata`` (process
and thread names) is repeated at the head of every slice, so each slice is a
valid trace on its own; together the slices hold every event exactly once.

Output of one unsliced file is byte-identical to
``chrome_trace.dumps_events(metadata + events)`` (compact JSON array and a
newline), so a small run's file does not change.

Memory: each section is encoded once, ``chunk_rows`` rows at a time, into its
own temporary file, remembering where every row starts (one int64 per row and
section). The final file(s) are then assembled by copying byte ranges, so
peak memory is one chunk's strings plus the offsets, whatever the run's length.

Usage::

    paths = write_trace(out_dir, "step_trace_20240102030405.json", "step_trace", "20240102030405",
                        metadata_events, [iteration_section, phase_section], n_rows,
                        slice_bytes=DEFAULT_SLICE_BYTES)
"""
from __future__ import annotations

import json
import re
from pathlib import Path
from typing import IO, Any, Callable, Iterable, Sequence

import numpy as np

from npu_tf_profiling.raw_format import own_files
from npu_tf_profiling.raw_format.atomic import AtomicFile
from npu_tf_profiling.reports.encoders.text_columns import comma_led

Section = Callable[[int, int], Sequence[str]]  # or an Arrow string array on the Arrow route (encoders.text_columns)

MIB = 1024 * 1024
DEFAULT_SLICE_MB = 200  # CANN's smallest slice_file_size(MB); also its default
DEFAULT_SLICE_BYTES = DEFAULT_SLICE_MB * MIB
MIN_SLICE_BYTES = 64 * 1024  # below this a slice would hold little more than its metadata
DEFAULT_CHUNK_ROWS = 8_192
_COPY_BLOCK = 8 * MIB


def encode_event(event: dict[str, Any]) -> str:
    """One event as compact JSON, exactly as ``chrome_trace.dumps_events`` writes it inside its array."""
    return json.dumps(event, ensure_ascii=False, allow_nan=False, separators=(",", ":"))


def slice_name(stem: str, index: int, timestamp: str) -> str:
    """CANN's name of slice ``index`` (0-based): ``<stem>_slice_<index>_<timestamp>.json``."""
    return f"{stem}_slice_{index}_{timestamp}.json"


def existing_slices(out_dir: Path, stem: str, timestamp: str) -> list[Path]:
    """The slices of ``stem``/``timestamp`` already in ``out_dir``, in slice order."""
    pattern = re.compile(rf"{re.escape(stem)}_slice_(\d+)_{re.escape(timestamp)}\.json")
    found = [(int(m.group(1)), p) for p in Path(out_dir).glob(f"{stem}_slice_*_{timestamp}.json")
             if (m := pattern.fullmatch(p.name))]
    return [p for _, p in sorted(found)]


class SliceFiles:
    """One timeline's files, written under temporary names and moved into place together.

    The one place that names, commits and cleans a timeline's parts, whichever way its writer cuts them
    (``write_trace`` plans whole rows; the task timeline, ``task.timeline``, streams under a byte budget):
    one part is ``whole_name``, several are CANN's slices. Stale files of the same timeline (the whole
    file, its slices, and what the caller adds) are removed after the commit, so a rewritten report never
    leaves a mix of old and new parts; each is removed only as a regular file the package wrote.
    """

    def __init__(self, out_dir: Path, whole_name: str, stem: str, timestamp: str, encoding: str | None = None) -> None:
        self.out_dir = Path(out_dir)
        self.whole_name, self.stem, self.timestamp, self.encoding = whole_name, stem, timestamp, encoding
        self._parts: list[AtomicFile] = []

    def __len__(self) -> int:
        return len(self._parts)

    def new_part(self) -> IO[Any]:
        """The handle of the next part (written under a temporary name until `commit`)."""
        part = AtomicFile(self.out_dir / self.whole_name, encoding=self.encoding)
        self._parts.append(part)
        return part.handle

    def commit(self, also_stale: Iterable[Path] = ()) -> list[Path]:
        """Move every part into place; returns their paths, in part order."""
        n = len(self._parts)
        finals = [self.out_dir / self.whole_name] if n == 1 else [self.out_dir / slice_name(self.stem, i, self.timestamp)
                                                                  for i in range(n)]
        stale = [self.out_dir / self.whole_name, *existing_slices(self.out_dir, self.stem, self.timestamp), *also_stale]
        for part, final in zip(self._parts, finals):
            part.commit(final)
        self._parts = []
        keep = set(finals)
        for path in stale:
            if path not in keep and path.exists():
                own_files.remove(path)
        return finals

    def abort(self) -> None:
        for part in self._parts:
            part.abort()
        self._parts = []


class _EncodedSection:
    """One section written to a temporary file; ``starts[i]`` is where row i begins (each event led by ``,``)."""

    def __init__(self, out_dir: Path, encode: Section, rows: int, chunk_rows: int) -> None:
        self.file = AtomicFile(out_dir / ".trace_section", encoding=None)
        self.starts = np.zeros(rows + 1, dtype=np.int64)
        position = 0
        for lo in range(0, rows, chunk_rows):
            hi = min(lo + chunk_rows, rows)
            row_texts = encode(lo, hi)
            if len(row_texts) != hi - lo:
                raise ValueError(f"a trace section returned {len(row_texts)} rows for {hi - lo}")
            sizes, data = comma_led(row_texts)
            self.starts[lo + 1:hi + 1] = position + np.cumsum(sizes)
            self.file.handle.write(data)
            position += len(data)
        self.file.handle.flush()

    def row_bytes(self) -> np.ndarray:
        return np.diff(self.starts)

    def copy(self, out: Any, lo: int, hi: int, skip_first: bool) -> bool:
        """Copy rows lo..hi-1 to ``out``; drops the leading comma when ``skip_first``; returns whether anything was copied."""
        begin, end = int(self.starts[lo]), int(self.starts[hi])
        if begin == end:
            return False
        if skip_first:
            begin += 1
        with open(self.file.tmp, "rb") as src:
            src.seek(begin)
            left = end - begin
            while left > 0:
                block = src.read(min(left, _COPY_BLOCK))
                out.write(block)
                left -= len(block)
        return True

    def discard(self) -> None:
        self.file.abort()


def plan_slices(row_bytes: np.ndarray, head_bytes: int, slice_bytes: int) -> list[tuple[int, int]]:
    """Row ranges [lo, hi) such that ``head_bytes`` plus each range's bytes stays within ``slice_bytes``.

    Greedy in row order (fewest slices, CANN's strategy 0); a single row larger
    than the room still gets a slice of its own, never dropped or cut.
    """
    rows = len(row_bytes)
    ends = np.cumsum(row_bytes)
    room = max(slice_bytes - head_bytes, 1)
    ranges: list[tuple[int, int]] = []
    lo, used_before = 0, 0
    while lo < rows:
        hi = int(np.searchsorted(ends, used_before + room, side="right"))
        hi = max(hi, lo + 1)
        ranges.append((lo, hi))
        used_before = int(ends[hi - 1])
        lo = hi
    return ranges or [(0, 0)]


def write_trace(
    out_dir: Path,
    whole_name: str,
    stem: str,
    timestamp: str,
    metadata: Sequence[dict[str, Any]],
    sections: Sequence[Section],
    rows: int,
    *,
    slice_bytes: int = DEFAULT_SLICE_BYTES,
    chunk_rows: int = DEFAULT_CHUNK_ROWS,
) -> list[Path]:
    """Write the timeline as ``out_dir/whole_name`` or, above ``slice_bytes``, as CANN slices; returns the paths.

    Stale files of the same timeline (the whole file, or slices of ``stem`` and
    ``timestamp``) are removed, so rewriting a report never leaves a mix of old
    and new parts. Every file is written under a temporary name and moved into
    place whole.
    """
    if slice_bytes < MIN_SLICE_BYTES:
        raise ValueError(f"slice size {slice_bytes} bytes is too small (minimum {MIN_SLICE_BYTES})")
    out_dir = Path(out_dir)
    head = ",".join(encode_event(e) for e in metadata).encode("utf-8")
    encoded: list[_EncodedSection] = []
    try:
        for section in sections:
            encoded.append(_EncodedSection(out_dir, section, rows, chunk_rows))
        row_bytes = sum((s.row_bytes() for s in encoded), np.zeros(rows, dtype=np.int64))
        head_bytes = len(head) + 3  # "[", "]" and the newline
        total = head_bytes + int(row_bytes.sum()) - (0 if head else 1)
        ranges = [(0, rows)] if total <= slice_bytes else plan_slices(row_bytes, head_bytes, slice_bytes)
        files = SliceFiles(out_dir, whole_name, stem, timestamp)
        try:
            for lo, hi in ranges:
                handle = files.new_part()
                handle.write(b"[" + head)
                empty = not head
                for section in encoded:
                    if section.copy(handle, lo, hi, skip_first=empty):
                        empty = False
                handle.write(b"]\n")
            return files.commit()
        except BaseException:
            files.abort()
            raise
    finally:
        for section in encoded:
            section.discard()
