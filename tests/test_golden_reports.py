"""The column writers equal the pre-rewrite writers' output, byte for byte, on small runs (issue 39)."""
from __future__ import annotations

import pytest

from tests.helpers.golden_reports import CASES, GOLDEN_DIR, report_outputs


@pytest.mark.parametrize("case", sorted(CASES))
def test_reports_equal_the_golden_files(tmp_path, case):
    outputs = report_outputs(tmp_path, case)
    golden_root = GOLDEN_DIR / case
    expected = {p.relative_to(golden_root).as_posix(): p.read_bytes() for p in golden_root.rglob("*") if p.is_file()}
    assert sorted(outputs) == sorted(expected)
    for rel, data in expected.items():
        assert outputs[rel] == data, f"{case}: {rel} differs from the golden file"
