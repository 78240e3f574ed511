"""What `npu-tf-prof cluster` pays per rank: ``rank_part`` (read, step formulas, CSV lines) on synthetic ranks.

The per-rank task (``reports.cluster.rank_task.rank_part``, default ``TaskOptions``: no timeline fragment, no
msprof-analyze folder) runs once per rank; at 1,024 ranks x 1,000 steps its cost alone is most of the
command's wall time on 2 cores, and it is pandas overhead on 1,000-row frames, not data volume (issue 39).

The ranks are ``testing.cluster_synthetic``'s (binary frames, 4 all-reduce groups, one slow rank), written once
into a temporary folder (or ``--data DIR``, reused when it already holds them). In this process, after one
warm-up call: ``--runs`` rounds, each calling ``rank_part`` on every rank in turn. Prints per round the
µs per rank, then the median and spread (min..max) over the rounds, and the process's peak RSS.

``--pieces`` also times the pieces the table of ``docs/scale.md`` lists, each called on its own (CPU time,
``time.process_time``, per rank): reading the raw frames, the step-trace formulas, the cluster rows, the CSV
lines; ``rank_part`` adds the sync points, the compact columns and the task-traced steps to them.

``--digest`` also prints a SHA-256 over every rank's returned CSV bytes, rows, sync columns and traced steps:
run it on two versions of the code to check that their outputs are identical.

Usage:
    .venv/bin/python benchmarks/rank_task.py [--ranks 128] [--steps 1000] [--runs 5] [--data DIR] [--pieces] [--digest]
"""
from __future__ import annotations

import argparse
import hashlib
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from npu_tf_profiling.reports.cluster import step_table as cst  # noqa: E402
from npu_tf_profiling.reports.cluster.data import rank_folders  # noqa: E402
from npu_tf_profiling.reports.cluster.rank_task import RankPart, rank_part  # noqa: E402
from npu_tf_profiling.reports.step import records, table  # noqa: E402
from npu_tf_profiling.testing.cluster_synthetic import ClusterPlan, write_cluster  # noqa: E402

GROUPS = 4


def ensure_ranks(root: Path, ranks: int, steps: int) -> list[tuple[str, str]]:
    """(prof_dir, device_dir) of the plan's ranks under ``root``, written unless already there."""
    folders = rank_folders(root) if root.is_dir() else []
    if len(folders) != ranks:
        write_cluster(root, ClusterPlan(ranks=ranks, steps=steps, groups=GROUPS, slow={ranks // 2: ("input", 3000.0)}, binary=True))
        folders = rank_folders(root)
    return [(str(prof), str(device)) for prof, device in folders]


def piece_times(folders: list[tuple[str, str]]) -> dict[str, float]:
    """CPU µs per rank of each piece, called on its own over every rank."""
    spent = dict.fromkeys(("read the raw frames", "step-trace formulas", "cluster rows", "CSV lines"), 0.0)

    def timed(name, fn, *args):
        began = time.process_time()
        out = fn(*args)
        spent[name] += time.process_time() - began
        return out

    for _, device_dir in folders:
        device = timed("read the raw frames", records.read_device, device_dir)
        frame = device.trace.frame
        steps = timed("step-trace formulas", table.compute_step_trace, frame, device.device_id, table.max_reduce_groups(frame))
        rows = timed("cluster rows", cst.rank_rows, steps)
        timed("CSV lines", lambda: cst.csv_lines(cst.as_csv_rows(rows)))
    return {name: seconds / len(folders) * 1e6 for name, seconds in spent.items()}


def digest(parts: list[RankPart]) -> str:
    """One hash over what the cross-rank work receives from each rank."""
    h = hashlib.sha256()
    for part in parts:
        h.update(repr((part.rank, part.count, part.n_reduce, part.skipped_lines, part.run_counter_models,
                       sorted(part.traced_steps))).encode())
        h.update(part.csv)
        h.update(part.csv_keys.tobytes())
        if part.rows is not None:
            h.update(repr(list(part.rows.columns)).encode() + repr(list(part.rows.dtypes)).encode())
            for name in part.rows.columns:
                h.update(part.rows[name].to_numpy().tobytes())
    return h.hexdigest()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--ranks", type=int, default=128)
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--data", type=Path, help="folder for the synthetic ranks (kept; default: a temporary one)")
    parser.add_argument("--pieces", action="store_true", help="also time the pieces of docs/scale.md's table")
    parser.add_argument("--digest", action="store_true", help="print a hash of every rank's returned data")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        root = args.data or Path(tmp) / "job"
        folders = ensure_ranks(root, args.ranks, args.steps)
        rank_part(*folders[0])  # warm-up: imports, first-call caches
        per_rank_us = []
        parts: list[RankPart] = []
        for run in range(args.runs):
            began = time.perf_counter()
            parts = [rank_part(prof, device) for prof, device in folders]
            per_rank_us.append((time.perf_counter() - began) / len(folders) * 1e6)
            print(f"run {run + 1}: {per_rank_us[-1]:,.0f} µs per rank", flush=True)
        pieces = [piece_times(folders) for _ in range(args.runs)] if args.pieces else []
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"rank_part, {args.ranks} ranks x {args.steps} steps, {args.runs} runs: median {statistics.median(per_rank_us):,.0f} µs "
          f"per rank (min {min(per_rank_us):,.0f}, max {max(per_rank_us):,.0f}); peak RSS {peak_mb:,.0f} MB")
    for name in pieces[0] if pieces else []:
        values = [p[name] for p in pieces]
        print(f"  {name}: median {statistics.median(values):,.0f} µs CPU per rank (min {min(values):,.0f}, max {max(values):,.0f})")
    if args.digest:
        print(f"digest {digest(parts)}")


if __name__ == "__main__":
    main()
