"""Speed of `npu-tf-prof cluster` on synthetic raw data: 64 ranks x 1,000 steps (target < 10 s).

The data come from ``npu_tf_profiling.testing.cluster_synthetic``: one
``PROF_*/device_<rank>/data/training_trace.jsonl`` per rank, each step a
synchronous all-reduce (waiting ranks' Reduce includes the wait), one slow rank
so the verdict has something to find, and ``--groups`` all-reduce groups.

Measured per round (the data written once, before the rounds), each phase timed:
  load      find every rank, read and parse the raw lines, per-rank step-trace tables
  rows      the cluster_step_trace_time rows (one per step and rank)
  verdict   slow-rank analyzers (outlier tests, wait vote, missing steps)
  timeline  the merged timeline's JSON text (events built and encoded)
  total     the whole `npu-tf-prof cluster OUTPUT_DIR` call (what a user waits for)

Usage:
    .venv/bin/python benchmarks/cluster_speed.py [--ranks 64] [--steps 1000] [--groups 4] [--rounds 3]
"""
from __future__ import annotations

import argparse
import contextlib
import io
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import pandas as pd  # noqa: E402

from npu_tf_profiling.cli import main as cli_main  # noqa: E402
from npu_tf_profiling.reports.cluster import step_table as cst  # noqa: E402
from npu_tf_profiling.reports.cluster import timeline as ctl  # noqa: E402
from npu_tf_profiling.reports.cluster import slow_rank as sr  # noqa: E402
from npu_tf_profiling.reports.cluster.data import load_cluster  # noqa: E402
from npu_tf_profiling.testing.cluster_synthetic import ClusterPlan, total_bytes, write_cluster  # noqa: E402

TARGET_S = 10.0


def phases(root: Path) -> dict[str, float]:
    t = {}
    start = time.perf_counter()
    data = load_cluster(root)
    t["load"] = time.perf_counter() - start
    mark = time.perf_counter()
    ranks = cst.rank_rows(data.table)
    rows = cst.cluster_step_trace_time(data.table)
    csv_text = cst.to_csv(rows)
    t["rows"] = time.perf_counter() - mark
    mark = time.perf_counter()
    report = sr.analyze(ranks, data.all_rank_ids, hosts=data.hosts)
    t["verdict"] = time.perf_counter() - mark
    mark = time.perf_counter()
    text, n_events, _ = ctl.cluster_timeline_json(data, ctl.align_clocks(data))
    t["write"] = time.perf_counter() - mark
    t["events"] = n_events
    t["bytes_out"] = len(text) + len(csv_text) + len(report.to_json())
    return t


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, default=64)
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--groups", type=int, default=4, help="all-reduce groups per step")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    with tempfile.TemporaryDirectory(prefix="cluster_speed_") as tmp:
        root = Path(tmp)
        started = time.perf_counter()
        write_cluster(root, ClusterPlan(ranks=args.ranks, steps=args.steps, groups=args.groups, slow={args.ranks // 2: ("input", 3000.0)}))
        print(f"synthetic data: {args.ranks} ranks x {args.steps} steps, {args.groups} all-reduce groups, "
              f"{total_bytes(root) / 1e6:.1f} MB raw, written in {time.perf_counter() - started:.1f} s")
        print(f"Python {platform.python_version()}, pandas {pd.__version__}, {os.cpu_count()} CPUs")
        totals, parts = [], []
        for _ in range(args.rounds):
            parts.append(phases(root))
            sink = io.StringIO()
            start = time.perf_counter()
            with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(io.StringIO()):
                code = cli_main(["cluster", str(root)])
            totals.append(time.perf_counter() - start)
            assert code == 0, code
            assert f"SLOW RANK {args.ranks // 2}: cause input" in sink.getvalue(), sink.getvalue()
        median = {k: statistics.median(p[k] for p in parts) for k in ("load", "rows", "verdict", "write")}
        total = statistics.median(totals)
        print("| ranks | steps | load s | rows s | verdict s | timeline s | total s (CLI) | timeline events |")
        print("|------:|------:|-------:|-------:|----------:|-----------:|--------------:|----------------:|")
        print(f"| {args.ranks} | {args.steps} | {median['load']:.2f} | {median['rows']:.2f} | {median['verdict']:.2f} | "
              f"{median['write']:.2f} | {total:.2f} | {int(parts[0]['events']):,} |")
        print(f"rounds: {', '.join(f'{t:.2f}' for t in totals)} s (CLI total); target < {TARGET_S:.0f} s: "
              f"{'met' if total < TARGET_S else 'MISSED'}")
        return 0 if total < TARGET_S else 1


if __name__ == "__main__":
    sys.exit(main())
