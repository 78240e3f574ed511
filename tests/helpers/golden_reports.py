"""Small report inputs whose outputs are pinned byte for byte in ``tests/data/golden_reports/``.

Why: the report writers were rewritten to work on columns and stream (issue 39);
their output on small runs must not change. The golden files were written by
the writers as they were before that rewrite (``python tests/golden_reports.py``
at that commit; it lives in ``tests/helpers/`` now), and ``test_golden_reports.py`` holds today's writers to them.
``data_parallel`` came later: its files, written by today's writers, equal what the writers before the
columnar rewrite (a9053c9) write from the same raw folder, every file and database dump (checked by hand).
Each case is deterministic: fixed raw records, fixed timestamps. SQLite
databases are compared through a text dump of every table (their bytes carry
page layout that says nothing about the content).

Regenerate (only when a format change is intended and documented):
    .venv/bin/python -m tests.helpers.golden_reports
"""
from __future__ import annotations

import argparse
import shutil
import sqlite3
import tempfile
from pathlib import Path
from typing import Callable

from tests.helpers.raw_fixtures import T0, Phases, iterations, make_prof_dir, record

GOLDEN_DIR = Path(__file__).resolve().parents[1] / "data" / "golden_reports"


def _odd_steps(root: Path) -> Path:
    """Two devices, two models, overlapping all-reduce groups, a negative span, N/A values, a missing GetNext end."""
    dev0 = iterations(6, phases=Phases(reduces=[(100, 300), (200, 300)]))
    dev0 += iterations(3, model_id=2, start=T0 + 500, phases=Phases(get_next=None))
    dev0.append(record(model_id=1, run=7, iteration_end=T0 + 7000.4, fp_start=None, bp_end=T0 + 6800.6,
                       get_next=[[T0 + 6050.2, None]], reduce=[[T0 + 6500, T0 + 6400]]))
    dev1 = iterations(4, start=T0 + 37.5, phases=Phases(reduces=[(50, 20)], data_aug=120.5))
    return make_prof_dir(root, {0: dev0, 1: dev1})


def _synthetic_frames(root: Path) -> Path:
    """80 noisy iterations written as binary frames, as the runtime writes them."""
    from npu_tf_profiling.testing.step_synthetic import StepPlan, write_step_prof_dir

    return write_step_prof_dir(root, StepPlan(iterations=80, noise=0.05, spikes={50: 3000.0}, seed=3))


def _data_parallel(root: Path) -> Path:
    """The frames a data-parallel worker writes: GetNext, one all-reduce group and a step counter (a resumed job's
    global step from 5,001: the iteration IDs are the steps)."""
    from npu_tf_profiling.testing.step_synthetic import StepPlan, write_step_prof_dir

    return write_step_prof_dir(root, StepPlan(iterations=60, noise=0.05, gap_spikes={20: 4000.0}, seed=5, global_step=5001))


def _with_tasks(root: Path) -> Path:
    """Task traces (StepStats) of a few iterations beside the step trace."""
    from npu_tf_profiling.testing.task_synthetic import layered_ops, write_synthetic_prof_dir

    return write_synthetic_prof_dir(root, 4, layered_ops(12)).prof_dir


CASES: dict[str, Callable[[Path], Path]] = {"odd_steps": _odd_steps, "synthetic_frames": _synthetic_frames, "with_tasks": _with_tasks,
                                            "data_parallel": _data_parallel}


def db_dump(path: Path) -> str:
    """Every table of a SQLite database as text: schema line, then its rows in rowid order."""
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        lines = []
        tables = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table' ORDER BY name")]
        for table in tables:
            sql = con.execute("SELECT sql FROM sqlite_master WHERE name=?", (table,)).fetchone()[0]
            lines.append(f"## {sql}")
            lines.extend(repr(row) for row in con.execute(f'SELECT * FROM "{table}" ORDER BY rowid'))
        return "\n".join(lines) + "\n"
    finally:
        con.close()


def report_outputs(root: Path, case: str) -> dict[str, bytes]:
    """Build the case under ``root``, write every report, and return relative path -> content (dbs dumped)."""
    from npu_tf_profiling.reports.writer import write_all_reports

    prof = CASES[case](root)
    write_all_reports(prof)
    out: dict[str, bytes] = {}
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        rel = path.relative_to(root).as_posix()
        if "/device_" in rel and "/mindstudio_profiler_output/" not in rel:
            continue  # the raw input
        out[rel + ".dump" if path.suffix == ".db" else rel] = db_dump(path).encode() if path.suffix == ".db" else path.read_bytes()
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description="Rewrite tests/data/golden_reports/ from today's writers (see the module "
                                     "docstring: only for an intended, documented format change, or a new case).")
    parser.add_argument("cases", nargs="*", help=f"only these cases (default: all of {', '.join(CASES)})")
    asked = parser.parse_args().cases
    if set(asked) - set(CASES):
        parser.error(f"unknown case(s) {sorted(set(asked) - set(CASES))}; the cases are {', '.join(CASES)}")
    for case in asked or CASES:
        with tempfile.TemporaryDirectory() as tmp:
            outputs = report_outputs(Path(tmp), case)
        target = GOLDEN_DIR / case
        shutil.rmtree(target, ignore_errors=True)
        for rel, data in outputs.items():
            (target / rel).parent.mkdir(parents=True, exist_ok=True)
            (target / rel).write_bytes(data)
        print(f"{case}: {len(outputs)} files, {sum(map(len, outputs.values()))} bytes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
