"""The cluster analysis' per-rank tasks on Dask's local schedulers: one thread against a thread pool.

Why the default is one task at a time in the process: a rank's work is Python and numpy on arrays of a few
thousand values, which hold the GIL, so on a small machine a thread pool adds switching and wins nothing.
Times ``rank_task.rank_batch`` over every rank of DIR (as ``npu-tf-prof cluster`` batches them), the
schedulers interleaved, ``--runs`` times each, in this process (no command start-up).

Usage:
    .venv/bin/python benchmarks/cluster_schedulers.py DIR [--runs 3] [--schedulers sync threads]
"""
from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from npu_tf_profiling.reports.cluster import engine
from npu_tf_profiling.reports.cluster.data import rank_folders
from npu_tf_profiling.reports.cluster.rank_task import TaskOptions, rank_batch


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", type=Path)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--schedulers", nargs="+", default=["sync", "threads"], choices=["sync", "threads"])
    args = parser.parse_args()
    folders = [(str(p), str(d)) for p, d in rank_folders(args.root)]
    times: dict[str, list[float]] = {name: [] for name in args.schedulers}
    for _ in range(args.runs):
        for name in args.schedulers:
            run = engine.Engine(where=name, local=name)
            clock = time.perf_counter()
            run.map(rank_batch, engine.batches(folders, workers=run.workers), TaskOptions(check_layouts=True))
            times[name].append(time.perf_counter() - clock)
    print(f"{len(folders)} ranks, {args.runs} interleaved runs")
    for name, values in times.items():
        print(f"  {name}: median {statistics.median(values):.2f} s ({', '.join(f'{v:.2f}' for v in values)})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
