"""``reports.encoders``: the Arrow and the pure-Python routes store the same database values with the same storage
types and write the same CSV bytes; ``StringIds.joined`` gives the ids of interning its texts one by one."""
from __future__ import annotations

import sqlite3

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from npu_tf_profiling.reports import encoders
from npu_tf_profiling.reports.encoders import sqlite_tables, text_columns
from npu_tf_profiling.reports.encoders.csv_file import write_int_csv
from npu_tf_profiling.reports.encoders.sqlite_tables import ColumnPart, Joined, Same, write_database
from npu_tf_profiling.reports.msprof.db_schema import StringIds
from tests.test_golden_reports import ROUTES

TABLES = {"T": [("i", "INTEGER"), ("t", "TEXT"), ("n", "NUMERIC"), ("maybe", "INTEGER"), ("note", "TEXT")]}


def _dump(path) -> list[tuple]:
    con = sqlite3.connect(path)
    try:
        assert con.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        return con.execute("SELECT *, typeof(i), typeof(t), typeof(n), typeof(maybe), typeof(note) FROM T ORDER BY rowid").fetchall()
    finally:
        con.close()


@pytest.mark.parametrize("route", ROUTES)
def test_both_routes_store_the_same_rows_and_types(tmp_path, route, monkeypatch):
    monkeypatch.setattr(sqlite_tables, "BATCH_ROWS", 3)  # several batches per part
    monkeypatch.setattr(encoders, "ROUTE", route)
    monkeypatch.setattr(encoders, "ARROW_MIN_ROWS", 0)  # the small cases through Arrow too
    n = 7
    steps = np.arange(-2, n - 2, dtype=np.int64)
    parts = [
        ColumnPart(n, [steps, Joined(("step", steps, "_", steps * 10)), np.linspace(0.0, 3.0, n), Same(None), Same("x")]),
        [(1, "a", 2.5, None, None), (2, "b", 4.0, 5, "y")],  # rows, a column of NULLs in a batch of its own
        [(3, "c", 1, None, None)],
    ]
    write_database(tmp_path / "t.db", TABLES, {"T": parts})
    rows = _dump(tmp_path / "t.db")
    assert rows[:3] == [(-2, "step-2_-20", 0, None, "x", "integer", "text", "integer", "null", "text"),
                        (-1, "step-1_-10", 0.5, None, "x", "integer", "text", "real", "null", "text"),
                        (0, "step0_0", 1, None, "x", "integer", "text", "integer", "null", "text")]
    assert rows[n:] == [(1, "a", 2.5, None, None, "integer", "text", "real", "null", "null"),
                        (2, "b", 4, 5, "y", "integer", "text", "integer", "integer", "text"),
                        (3, "c", 1, None, None, "integer", "text", "integer", "null", "null")]
    assert len(rows) == n + 3


def test_joined_ids_equal_interning_one_by_one():
    steps = np.array([5, 3, 5, 9, 3, 1], dtype=np.int64)
    groups = np.array([1, 1, 1, 2, 2, 1], dtype=np.int64)
    one_by_one, at_once = StringIds(), StringIds()
    for strings in (one_by_one, at_once):
        strings("hcom_allReduce_")
    expected = [one_by_one(f"op_{s}_{g}") for s, g in zip(steps.tolist(), groups.tolist())]
    expected += [one_by_one(f"ProfilerStep#{s}") for s in steps.tolist()] + [one_by_one("N/A"), one_by_one("op_9_2")]
    got = at_once.joined("op_", steps, "_", groups).tolist() + at_once.joined("ProfilerStep#", steps).tolist()
    got += [at_once("N/A"), at_once("op_9_2")]  # a single text already in a joined block keeps its id
    assert got == expected
    assert at_once.joined("ProfilerStep#", np.array([3, 4])).tolist() == [one_by_one("ProfilerStep#3"), one_by_one("ProfilerStep#4")]

    def table(strings):
        return [row for part in strings.table for row in (part.rows() if isinstance(part, ColumnPart) else part)]

    assert table(at_once) == table(one_by_one)


def test_joined_refuses_numbers_that_could_run_together():
    with pytest.raises(ValueError, match="split by text without digits"):
        StringIds().joined("x", np.array([1]), "0", np.array([2]))


@pytest.mark.parametrize("route", ROUTES)
def test_both_routes_write_the_same_csv(tmp_path, route, monkeypatch):
    monkeypatch.setattr(encoders, "ROUTE", route)
    monkeypatch.setattr(encoders, "ARROW_MIN_ROWS", 0)  # the small cases through Arrow too
    values = np.array([0, -7, 2**62, 15, 3], dtype=np.int64)
    known = np.array([True, True, True, False, True])
    write_int_csv(tmp_path / "t.csv", ["A", "B(us)"], [(values, known), (values * 0 + 1, None)], missing="N/A", chunk_rows=2)
    assert (tmp_path / "t.csv").read_bytes() == f"A,B(us)\n0,1\n-7,1\n{2**62},1\nN/A,1\n3,1\n".encode()


@pytest.mark.skipif(not encoders.arrow_available(), reason="the fast extra (pyarrow) is not installed")
def test_arrow_rows_of_text_equal_the_str_rows():
    import pyarrow as pa

    from npu_tf_profiling.reports.encoders.text_columns import comma_led, join_usable

    rows = ["a", "", "é€", "", "b"]
    sizes, data = comma_led(pa.array(rows))
    assert (sizes.tolist(), data) == ([2, 0, 6, 0, 2], ",a,é€,b".encode()) and comma_led(rows)[1] == data
    assert comma_led(rows)[0].tolist() == sizes.tolist()
    kinds = [(pa.array(["x1", "x2", "x3"]), np.array([True, False, False])), (pa.array(["y1", "y2", "y3"]), np.array([True, True, False]))]
    assert join_usable(kinds).to_pylist() == ["x1,y1", "y2", ""]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-2**60, 2**60).map(float),
                          st.sampled_from([0.0, -0.0, 1e16, -1e16, 9999999999999998.0, 1700000000002322.0]))))
def test_float_reprs_are_the_json_encoders_floats(values):
    """Whole numbers take int formatting, the rest repr: the text is repr's either way (json.dumps writes floats so)."""
    assert text_columns.float_reprs(np.array(values, dtype="float64")) == [repr(v) for v in values]
