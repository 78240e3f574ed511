"""The column writers equal the pre-rewrite writers' output, byte for byte, on small runs (issue 39), through
both database routes (issue 50): Arrow batches into ADBC (the ``fast`` extra) and rows into ``executemany``."""
from __future__ import annotations

import pytest

from npu_tf_profiling.reports import encoders
from tests.helpers.golden_reports import CASES, GOLDEN_DIR, report_outputs

ROUTES = [pytest.param("arrow", marks=pytest.mark.skipif(not encoders.arrow_available(),
                                                         reason="the fast extra (pyarrow, adbc-driver-sqlite) is not installed")),
          "python"]


@pytest.mark.parametrize("route", ROUTES)
@pytest.mark.parametrize("case", sorted(CASES))
def test_reports_equal_the_golden_files(tmp_path, case, route, monkeypatch):
    monkeypatch.setattr(encoders, "ROUTE", route)
    outputs = report_outputs(tmp_path, case)
    golden_root = GOLDEN_DIR / case
    expected = {p.relative_to(golden_root).as_posix(): p.read_bytes() for p in golden_root.rglob("*") if p.is_file()}
    assert sorted(outputs) == sorted(expected)
    for rel, data in expected.items():
        assert outputs[rel] == data, f"{case} ({route} route): {rel} differs from the golden file"
