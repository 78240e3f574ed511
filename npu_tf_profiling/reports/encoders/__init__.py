"""Encoders: the report writers' inner loops on columns, in C through Arrow when the ``fast`` extra is installed.

``sqlite_tables`` (the msprof databases) and ``text_columns`` (integer CSVs)
each have two routes with the same output: Arrow (pyarrow, and the ADBC
SQLite driver for the databases) and pure Python. ``ROUTE`` is chosen once, by
what is installed; the tests set it to hold both routes to the golden files.
"""
from __future__ import annotations


def arrow_available() -> bool:
    """Whether the ``fast`` extra (pyarrow and the ADBC SQLite driver) is installed."""
    try:
        import adbc_driver_sqlite.dbapi  # noqa: F401
        import pyarrow.compute  # noqa: F401
    except ImportError:
        return False
    return True


ROUTE = "arrow" if arrow_available() else "python"  # "arrow" or "python"
