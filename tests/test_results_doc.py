"""benchmarks/RESULTS.md stays a page a newcomer reads at a glance (issue 41).

It was a 1,500-line lab diary; now it opens with one table of every target and its status, keeps
one section per benchmark script, and sends the investigations to benchmarks/history/. These checks
keep it so: a new investigation appended to RESULTS.md breaks the line budget, a new benchmark script
without a section is caught, and a history file renamed under a comment that cites it is caught.
"""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BENCHMARKS = ROOT / "benchmarks"
RESULTS = BENCHMARKS / "RESULTS.md"
HISTORY = BENCHMARKS / "history"
MAX_LINES = 500
SUMMARY_HEADER = "| metric | target | current | met? | command |"
MET_VALUES = ("yes", "no", "**no**", "not measured")
LINK = re.compile(r"\]\(([^)#\s]+)")
CITED_HISTORY = re.compile(r"benchmarks/history/[\w.-]+\.md")


def _lines() -> list[str]:
    return RESULTS.read_text(encoding="utf-8").splitlines()


def test_results_fits_the_line_budget() -> None:
    assert len(_lines()) <= MAX_LINES, (
        f"{RESULTS} has {len(_lines())} lines (at most {MAX_LINES}): move investigations to {HISTORY}")


def test_results_opens_with_the_summary_table() -> None:
    lines = _lines()
    first_section = next(i for i, line in enumerate(lines) if line.startswith("## "))
    assert SUMMARY_HEADER in lines[:first_section], "the summary table must come before the first section"
    start = lines.index(SUMMARY_HEADER) + 2  # past the header and its |---| line
    rows = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        rows.append(line)
    assert len(rows) >= 20, "the summary table lost its rows"
    for row in rows:
        cells = [cell.strip() for cell in row.strip("|").split("|")]
        assert len(cells) == 5, row
        assert cells[3].startswith(MET_VALUES), f"met? must be yes / no / not measured: {row}"


def test_every_benchmark_script_is_named() -> None:
    text = RESULTS.read_text(encoding="utf-8")
    missing = [script.name for script in sorted(BENCHMARKS.glob("*.py")) if script.name not in text]
    assert not missing, f"benchmarks with no mention in RESULTS.md: {missing}"


def test_links_into_history_resolve() -> None:
    pages = [RESULTS, *sorted(HISTORY.glob("*.md"))]
    broken = []
    for page in pages:
        for target in LINK.findall(page.read_text(encoding="utf-8")):
            if "://" not in target and not (page.parent / target).exists():
                broken.append(f"{page.relative_to(ROOT)} -> {target}")
    assert not broken, broken


def test_every_history_file_is_listed_and_links_back() -> None:
    index = (HISTORY / "README.md").read_text(encoding="utf-8")
    for page in sorted(HISTORY.glob("20*.md")):
        text = page.read_text(encoding="utf-8")
        assert f"]({page.name})" in index, f"{page.name} is not listed in history/README.md"
        assert text.startswith("# "), f"{page.name} needs a title line"
        assert "](../RESULTS.md)" in text, f"{page.name} needs a link back to RESULTS.md"


def test_history_files_cited_in_code_exist() -> None:
    sources = [*(ROOT / "npu_tf_profiling").rglob("*.py"), *(ROOT / "tests").rglob("*.py"),
               *BENCHMARKS.glob("*.py"), *(ROOT / "docs").glob("*.md"), ROOT / "README.md"]
    cited = {name for path in sources for name in CITED_HISTORY.findall(path.read_text(encoding="utf-8"))}
    missing = sorted(name for name in cited if not (ROOT / name).exists())
    assert not missing, missing
