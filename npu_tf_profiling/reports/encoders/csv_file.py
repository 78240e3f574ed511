"""Write a CSV of integer columns (with a text for unknown cells) in chunks, at array speed.

Why not ``DataFrame.to_csv``: on nullable ``Int64`` columns pandas formats
cell by cell through object arrays, about 14 µs a row on the step-trace table,
so a million-iteration CSV took 14 s and a copy of the table in memory. Here
each column of a chunk of rows becomes text at once (``encoders.text_columns``:
Arrow's casts, or one ``map(str, ...)`` over its ints) and rows are joined in
C; memory is one chunk's text.
The bytes are what ``to_csv(index=False, na_rep=..., lineterminator="\\n")``
writes for such a table: plain header names, decimal integers, ``na_rep``.
"""
from __future__ import annotations

from pathlib import Path
from typing import Optional, Sequence

import numpy as np
import pandas as pd

from npu_tf_profiling.raw_format.atomic import AtomicFile
from npu_tf_profiling.reports.encoders.text_columns import csv_lines

CHUNK_ROWS = 65_536


def int_column(series: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """A (nullable) integer column as (int64 values, 0 where unknown; known mask)."""
    return series.to_numpy(dtype="int64", na_value=0), ~np.asarray(series.isna())


def write_int_csv(
    path: Path, header: Sequence[str], columns: Sequence[tuple[np.ndarray, Optional[np.ndarray]]], missing: str = "",
    chunk_rows: int = CHUNK_ROWS,
) -> None:
    """Write ``header`` and the rows of ``columns`` ((values, known or None) each) to ``path``, whole or not at all."""
    rows = len(columns[0][0]) if columns else 0
    with AtomicFile(path, encoding=None) as out:
        out.handle.write((",".join(header) + "\n").encode())
        for lo in range(0, rows, chunk_rows):
            out.handle.write(csv_lines(columns, lo, min(lo + chunk_rows, rows), missing))
