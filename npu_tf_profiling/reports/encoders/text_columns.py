"""Integer columns as CSV text, a chunk of rows at a time: through Arrow when installed, else ``map(str)``.

The Arrow route casts each column to text, puts ``missing`` where unknown and
joins the cells and the line ends in C (``binary_join_element_wise``); the
chunk's text is then the string array's data buffer, written as it is. About a
fifth of the time of ``str`` of each value: 0.08 against 0.37 µs a cell, the line joins
included (5 columns of 200,000 int64 values, best of 3, a 2-core machine). Both
routes write the same bytes: decimal integers, ``missing`` for unknown cells.
"""
from __future__ import annotations

from typing import Any, Optional, Sequence

import numpy as np

from npu_tf_profiling.reports import encoders

IntColumn = tuple[np.ndarray, Optional[np.ndarray]]  # (int64 values, known mask or None: all known)


def column_texts(values: np.ndarray, known: Optional[np.ndarray], missing: str) -> list[str]:
    """Each value as decimal text, ``missing`` where not known."""
    out = list(map(str, values.tolist()))
    if known is not None:
        for i in np.flatnonzero(~known).tolist():
            out[i] = missing
    return out


def csv_lines(columns: Sequence[IntColumn], lo: int, hi: int, missing: str) -> bytes:
    """Rows ``lo:hi`` of ``columns`` as UTF-8 CSV lines, each ending in a newline."""
    if encoders.use_arrow(hi - lo):
        return _arrow_lines(columns, lo, hi, missing)
    texts = [column_texts(v[lo:hi], None if k is None else k[lo:hi], missing) for v, k in columns]
    return ("\n".join(map(",".join, zip(*texts))) + "\n").encode()


def _arrow_lines(columns: Sequence[IntColumn], lo: int, hi: int, missing: str) -> bytes:
    import pyarrow as pa
    import pyarrow.compute as pc

    cells = []
    for values, known in columns:
        text = pc.cast(pa.array(values[lo:hi]), pa.string())
        cells.append(text if known is None else pc.if_else(pa.array(known[lo:hi]), text, missing))
    lines = pc.binary_join_element_wise(pc.binary_join_element_wise(*cells, ","), "", "\n")
    offsets = np.frombuffer(lines.buffers()[1], dtype=np.int32)[lines.offset:lines.offset + len(lines) + 1]
    return lines.buffers()[2].to_pybytes()[offsets[0]:offsets[-1]]


# Rows of text on the Arrow route are Arrow string arrays; these helpers take either form, so the callers
# (the step-trace timeline, trace_slices) write one code path.


def arrow_texts(values: np.ndarray, known: Optional[np.ndarray], missing: str) -> Any:
    """``column_texts`` as an Arrow string array."""
    import pyarrow as pa
    import pyarrow.compute as pc

    text = pc.cast(pa.array(values), pa.string())
    return text if known is None or known.all() else pc.if_else(pa.array(known), text, missing)


def join_texts(pieces: Sequence[Any]) -> Any:
    """Per row, the pieces (fixed str, or Arrow string arrays) joined with nothing between."""
    import pyarrow.compute as pc

    return pc.binary_join_element_wise(*pieces, "")


def join_usable(per_type: Sequence[tuple[Any, np.ndarray]]) -> Any:
    """Per row, the usable texts of several kinds joined by commas ("" where none), as ``",".join(filter(None, ...))``."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if len(per_type) == 1:
        texts, usable = per_type[0]
        return pc.if_else(pa.array(usable), texts, "")
    led = [pc.if_else(pa.array(usable), pc.binary_join_element_wise(",", texts, ""), "") for texts, usable in per_type]
    return pc.utf8_slice_codeunits(pc.binary_join_element_wise(*led, ""), 1)  # each led by a comma: drop the first


def as_texts(rows: Any) -> list[str]:
    """Rows of text as a list of str, whichever route made them."""
    return rows if isinstance(rows, list) else rows.to_pylist()


def comma_led(rows: Any) -> tuple[np.ndarray, bytes]:
    """Each non-empty row led by a comma: (each row's size in bytes, all rows' UTF-8 bytes)."""
    if isinstance(rows, list):
        pieces = ["," + text if text else "" for text in rows]
        data = "".join(pieces).encode("utf-8")
        sizes = np.fromiter((len(p) for p in pieces), dtype=np.int64, count=len(pieces))
        if len(data) != int(sizes.sum()):  # non-ASCII text: count bytes, not characters
            sizes = np.fromiter((len(p.encode("utf-8")) for p in pieces), dtype=np.int64, count=len(pieces))
        return sizes, data
    import pyarrow.compute as pc

    led = pc.if_else(pc.equal(rows, ""), "", pc.binary_join_element_wise(",", rows, ""))
    offsets = np.frombuffer(led.buffers()[1], dtype=np.int32)[led.offset:led.offset + len(led) + 1]
    return np.diff(offsets).astype(np.int64), led.buffers()[2].to_pybytes()[offsets[0]:offsets[-1]]


def float_reprs(values: np.ndarray) -> list[str]:
    """Each float64 as its ``repr`` (as ``json.dumps`` writes it), whole numbers through int formatting.

    A timestamp in µs since the epoch (1.7e15) takes Python's shortest-repr search
    about 0.6 µs; a whole one is ``<int>.0`` below 1e16, which int formatting writes
    in a third of the time (4,000 values: 0.71 against 2.31 ms; the command is in
    benchmarks/history/2026-12-07-layouts-text.md). Other
    values (fractions, -0.0, NaN, 1e16 and up) keep ``repr``.
    """
    whole = np.isfinite(values) & (values == np.trunc(values)) & (np.abs(values) < 1e16) & ~((values == 0) & np.signbit(values))
    if whole.all():
        return [f"{v}.0" for v in values.astype(np.int64).tolist()]
    return [f"{int(v)}.0" if w else repr(v) for v, w in zip(values.tolist(), whole.tolist())]
