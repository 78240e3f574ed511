"""Encoders: the report writers' inner loops on columns, in C through Arrow when the ``fast`` extra is installed.

``sqlite_tables`` (the msprof databases) and ``text_columns`` (integer CSVs)
each have two routes with the same output: Arrow (pyarrow, and the ADBC
SQLite driver for the databases) and pure Python. ``ROUTE`` is chosen once, by
what is installed; the tests set it to hold both routes to the golden files.
"""
from __future__ import annotations

import importlib.util


def arrow_available() -> bool:
    """Whether the ``fast`` extra (pyarrow and the ADBC SQLite driver) is installed.

    Found, not imported: a short run's reports (the job's own, at exit) never load pyarrow (~30 MiB).
    """
    return all(importlib.util.find_spec(name) is not None for name in ("pyarrow", "adbc_driver_sqlite", "adbc_driver_manager"))


ROUTE = "arrow" if arrow_available() else "python"  # "arrow" or "python"
# Fewer rows than this go the Python way even with Arrow: each Arrow call costs some 10-50 µs, so a chunk of a
# few rows over thousands of columns (a crafted 30,000-pair frame) was 40% slower through Arrow (measured).
ARROW_MIN_ROWS = 1024


def use_arrow(rows: int) -> bool:
    """Whether ``rows`` rows (a chunk, a database) go through Arrow."""
    return ROUTE == "arrow" and rows >= ARROW_MIN_ROWS
