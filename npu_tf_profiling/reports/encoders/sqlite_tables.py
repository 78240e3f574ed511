"""Write a new SQLite database from columns: through Arrow and ADBC when installed, else row by row.

A million-iteration rank fills some 9 million rows. Handing them to
``sqlite3.executemany`` costs a Python tuple and a bind call per row, about
3 s a million; ingesting Arrow batches of 65,536 rows through the ADBC
SQLite driver binds them in C, about 0.6 s a million (measured on a 2-core machine, in the
1M-iteration ``report`` of ``benchmarks/scale_report.py``).
pyarrow and the ADBC driver are the optional ``fast`` extra: without them the
same rows go through ``executemany``. Both routes insert the same values into
the same declared columns, so the stored values and their storage types are
the same (SQLite applies the column's affinity to both);
``tests/test_golden_reports.py`` holds both routes to the golden dumps.

A table's data is a list of parts, written in order: a ``ColumnPart``
(numpy columns, ``Same`` values, ``Joined`` texts) or a list of rows. The data
may also come as a stream of (table, parts) pairs, a table more than once (its
parts appended in the order they come): every table is created first, in
``tables``' order, so the schema is the same, and a caller that builds one
table's columns at a time holds only those (a million-iteration rank's
profiler database: ``msprof.profiler_db``).
"""
from __future__ import annotations

import os
import sqlite3
from dataclasses import dataclass
from itertools import chain, islice, repeat
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping, Sequence, Union

import numpy as np

from npu_tf_profiling.raw_format import own_files
from npu_tf_profiling.reports import encoders

BATCH_ROWS = 65_536  # rows per Arrow batch and per numpy-to-Python conversion: bounded memory, few calls


@dataclass(frozen=True)
class Same:
    """One value (``None``: NULL) in every row of a column part."""

    value: Any


@dataclass(frozen=True)
class Joined:
    """Text built per row from fixed strings and whole-number columns, e.g. ``("step", steps)`` -> ``step7``.

    The Arrow route builds it in C (cast to text, ``binary_join_element_wise``);
    the row route with ``str``: the same text.
    """

    pieces: tuple[Union[str, np.ndarray], ...]

    def texts(self, lo: int, hi: int) -> Iterator[str]:
        columns = [repeat(p) if isinstance(p, str) else map(str, p[lo:hi].tolist()) for p in self.pieces]
        return ("".join(values) for values in zip(*columns))


Column = Union[np.ndarray, Sequence[Any], Same, Joined]


@dataclass(frozen=True)
class ColumnPart:
    """``length`` rows of a table given as its columns, in the table's column order."""

    length: int
    columns: Sequence[Column]

    def rows(self) -> Iterator[tuple[Any, ...]]:
        """The rows as Python values (the ``executemany`` route), converted a batch at a time."""
        return chain.from_iterable(zip(*(_python(c, lo, min(lo + BATCH_ROWS, self.length)) for c in self.columns))
                                   for lo in range(0, self.length, BATCH_ROWS))


Part = Union[ColumnPart, Sequence[Sequence[Any]]]
Columns = Sequence[tuple[str, str]]  # (name, declared SQLite type)


def _python(column: Column, lo: int, hi: int) -> Iterable[Any]:
    if isinstance(column, Same):
        return repeat(column.value, hi - lo)
    if isinstance(column, Joined):
        return column.texts(lo, hi)
    if isinstance(column, np.ndarray):
        return column[lo:hi].tolist()
    return column[lo:hi]


def column_items(values: np.ndarray, chunk: int = BATCH_ROWS) -> Iterator[Any]:
    """The values of a numpy column as Python numbers, converted a chunk at a time (for rows built in Python)."""
    return chain.from_iterable(values[lo:lo + chunk].tolist() for lo in range(0, len(values), chunk))


TableParts = Iterable[tuple[str, Sequence[Part]]]


def write_database(path: Path, tables: Mapping[str, Columns], data: Union[Mapping[str, Sequence[Part]], TableParts],
                   rows_hint: int | None = None) -> None:
    """Create every table of ``tables`` (empty where ``data`` has none) in a new database at ``path``.

    Built under a temporary name in the same folder, then moved over ``path``:
    a reader never sees half a database, and the temporary name does not match
    the ``ascend_pytorch_profiler_<rank>.db`` pattern tools look for. No
    journal and no syncs while building: the file is private until it is moved.
    ``data``: a mapping, or a stream of (table, parts) with ``rows_hint``, the rows
    it will hold (which route to take; a stream cannot be counted beforehand).
    """
    own_files.make_dir(path.parent)
    fd, tmp = own_files.create_temp(path.parent, prefix=f".{path.name}.")
    os.close(fd)
    try:
        if isinstance(data, Mapping):
            rows = sum(part.length if isinstance(part, ColumnPart) else len(part) for parts in data.values() for part in parts)
            pairs: TableParts = data.items()
        else:
            rows, pairs = rows_hint or 0, data
        (_write_arrow if encoders.use_arrow(rows) else _write_rows)(tmp, tables, pairs)
        own_files.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def _create(table: str, columns: Columns) -> str:
    return f"CREATE TABLE {table} ({', '.join(f'{c} {t}' for c, t in columns)})"


def _write_rows(tmp: str, tables: Mapping[str, Columns], data: TableParts) -> None:
    conn = sqlite3.connect(tmp)
    try:
        conn.execute("PRAGMA journal_mode=OFF")
        conn.execute("PRAGMA synchronous=OFF")
        for table, columns in tables.items():
            conn.execute(_create(table, columns))
        for table, parts in data:
            marks = ", ".join("?" * len(tables[table]))
            for part in parts:
                conn.executemany(f"INSERT INTO {table} VALUES ({marks})", part.rows() if isinstance(part, ColumnPart) else part)
        conn.commit()
    finally:
        conn.close()


def _write_arrow(tmp: str, tables: Mapping[str, Columns], data: TableParts) -> None:
    """The ADBC route. Its catch: with ``journal_mode=OFF`` the pragmas must be set in autocommit and the
    work committed through the ADBC connection, else the file's header is left zeroed (measured)."""
    import adbc_driver_sqlite.dbapi as adbc

    conn = adbc.connect(tmp, autocommit=True)
    try:
        cursor = conn.cursor()
        try:
            for pragma in ("PRAGMA journal_mode=OFF", "PRAGMA synchronous=OFF"):
                cursor.execute(pragma)
                cursor.fetchall()
            conn.adbc_connection.set_autocommit(False)
            for table, columns in tables.items():
                cursor.execute(_create(table, columns))
            for table, parts in data:
                for part in parts:
                    for batch in _batches(part, tables[table]):
                        cursor.adbc_ingest(table, batch, mode="append")
            conn.adbc_connection.commit()
        finally:
            cursor.close()
    finally:
        conn.close()


def _batches(part: Part, columns: Columns) -> Iterator[Any]:
    """Arrow record batches of at most ``BATCH_ROWS`` rows of one part."""
    import pyarrow as pa

    names = [name for name, _ in columns]
    if isinstance(part, ColumnPart):
        for lo in range(0, part.length, BATCH_ROWS):
            hi = min(lo + BATCH_ROWS, part.length)
            yield pa.record_batch([_arrow(c, lo, hi, t) for c, (_, t) in zip(part.columns, columns)], names=names)
        return
    rows = iter(part)
    while chunk := list(islice(rows, BATCH_ROWS)):
        yield pa.record_batch([_arrow(list(values), 0, len(chunk), t) for values, (_, t) in zip(zip(*chunk), columns)],
                              names=names)


def _arrow(column: Column, lo: int, hi: int, declared: str) -> Any:
    """One column's rows ``lo:hi`` as an Arrow array; NULLs typed by the declared column type."""
    import pyarrow as pa
    import pyarrow.compute as pc

    null_type = pa.string() if declared.startswith("TEXT") else pa.int64()
    if isinstance(column, Same):
        return pa.nulls(hi - lo, null_type) if column.value is None else pa.repeat(column.value, hi - lo)
    if isinstance(column, Joined):
        pieces = [p if isinstance(p, str) else pc.cast(pa.array(p[lo:hi]), pa.string()) for p in column.pieces]
        return pc.binary_join_element_wise(*pieces, "")
    array = pa.array(column[lo:hi])
    return array.cast(null_type) if pa.types.is_null(array.type) else array
