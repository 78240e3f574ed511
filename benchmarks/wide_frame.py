"""How long the reports take on step-trace rows with very many all-reduce pairs (issue 22, row 9).

Two PROF folders, each with one binary frame file:
  crafted   2 records whose frame claims 30,000 all-reduce pairs (a 1 MB file with a valid checksum):
            the readers keep the first MAX_REDUCE_PAIRS (1,024) and warn; before, `report` ran for
            more than 300 s (one pandas column at a time).
  widest    --rows records of the widest row the writer produces: 1,024 all-reduce pairs each.

Measured, in this process after one warm-up round: ``load_prof_dir`` (decode + step-trace table) and
``write_all_reports`` (every file, the msprof-analyze folder included). Prints the median, min and
max over ``--rounds`` rounds, in seconds.

Usage:
    .venv/bin/python benchmarks/wide_frame.py [--rows 1000] [--rounds 5]
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from npu_tf_profiling.raw_format import layout  # noqa: E402
from npu_tf_profiling.raw_format.training_frame import MAX_REDUCE_PAIRS, NO_STEP, RecordShape, encode_frame  # noqa: E402
from npu_tf_profiling.reports.prof_dir import load_prof_dir  # noqa: E402
from npu_tf_profiling.reports.writer import write_all_reports  # noqa: E402

T0 = 1.7e15


def write_prof(root: Path, name: str, rows: int, pairs: int) -> Path:
    """A PROF folder whose one frame has `rows` records of `pairs` all-reduce pairs, 1 ms apart."""
    prof = root / f"{layout.PROF_DIR_PREFIX}1_20260101000000_{name}"
    device = layout.device_dir(prof, 0)
    (device / layout.DATA_DIR).mkdir(parents=True)
    (device / layout.INFO_FILE).write_text(json.dumps({"device_id": 0}))
    shape = RecordShape(get_next_pairs=1, has_fp=True, has_bp=True, reduce_pairs=pairs, has_step=False)
    records = np.zeros(rows, dtype=shape.dtype)
    base = T0 + 1000.0 * np.arange(1, rows + 1)
    records["run"], records["step"] = np.arange(1, rows + 1), NO_STEP
    reduces = base[:, None] + 600 + 0.001 * np.arange(2 * pairs)[None, :]
    records["times"] = np.column_stack([base, base + 10, base + 20, base + 500, reduces, base + 900])
    layout.training_frames_path(prof, 0).write_bytes(encode_frame(1, shape, records))
    return prof


def timed(work, rounds: int) -> list[float]:
    work()  # warm-up: imports, caches
    out = []
    for _ in range(rounds):
        start = time.perf_counter()
        work()
        out.append(time.perf_counter() - start)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    warnings.simplefilter("ignore")
    with tempfile.TemporaryDirectory() as tmp:
        cases = {
            "crafted (2 records claiming 30,000 pairs)": write_prof(Path(tmp), "CRAFTED0", 2, 30_000),
            f"widest ({args.rows} records x {MAX_REDUCE_PAIRS} pairs)": write_prof(Path(tmp), "WIDEST00", args.rows, MAX_REDUCE_PAIRS),
        }
        print(f"{'case':<44} {'what':<18} {'median s':>9} {'min s':>7} {'max s':>7}")
        for label, prof in cases.items():
            for what, work in (("load_prof_dir", lambda: load_prof_dir(prof)), ("write_all_reports", lambda: write_all_reports(prof))):
                times = timed(work, args.rounds)
                print(f"{label:<44} {what:<18} {statistics.median(times):9.3f} {min(times):7.3f} {max(times):7.3f}")


if __name__ == "__main__":
    main()
