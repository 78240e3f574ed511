"""What `npu-tf-prof cluster --layouts` pays per rank for each file of its msprof-analyze folder.

``--layouts`` writes one folder per rank (``reports.msprof.writer.write_rank_folder``); at 1,024 ranks its
parts decide the command's time. This times them one by one, CPU time (``time.process_time``) per rank:
reading the raw frames, the step-trace formulas, the rank model, ``trace_view.json``,
``communication.json`` and ``communication_matrix.json`` (texts built, not written), ``step_trace_time.csv``,
and the two databases (written to a temporary folder).

``--code DIR`` times the package of another checkout (a worktree of an older commit), so two versions
can be run one after the other on the same ranks; ``--digest`` also prints a SHA-256 over every rank's three
JSON texts, to check that they write the same bytes.

The ranks are ``testing.cluster_synthetic``'s, as ``benchmarks/scale.py`` makes them (binary frames, 4
all-reduce groups, one slow rank), written once into a temporary folder (or ``--data DIR``, reused).

Usage:
    .venv/bin/python benchmarks/layout_parts.py [--ranks 16] [--steps 1000] [--data DIR] [--code DIR] [--digest]
"""
from __future__ import annotations

import argparse
import hashlib
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any, Callable

REPO = Path(__file__).resolve().parents[1]
GROUPS = 4  # all-reduce groups a step, as benchmarks/scale.py's ranks


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, default=16)
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--data", type=Path, help="where the synthetic ranks go (reused when they are there)")
    parser.add_argument("--code", type=Path, default=REPO, help="the checkout whose package is timed (default: this one)")
    parser.add_argument("--digest", action="store_true")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(args.code.resolve()))
    from npu_tf_profiling.reports.cluster.data import rank_folders
    from npu_tf_profiling.reports.msprof import communication_json, step_trace_time, trace_view
    from npu_tf_profiling.reports.msprof.analysis_db import write_analysis_db
    from npu_tf_profiling.reports.msprof.profiler_db import write_profiler_db
    from npu_tf_profiling.reports.msprof.rank_model import build_rank_model
    from npu_tf_profiling.reports.step import records
    from npu_tf_profiling.reports.step import table as st
    from npu_tf_profiling.reports.task.table import load_device_tasks
    from npu_tf_profiling.testing.cluster_synthetic import ClusterPlan, write_cluster

    print(f"package: {Path(trace_view.__file__).resolve().parents[3]}")
    data = args.data or Path(tempfile.mkdtemp(prefix="layout_parts_"))
    root = data / f"job_{args.ranks}x{args.steps}"
    if not root.is_dir():
        write_cluster(root, ClusterPlan(ranks=args.ranks, steps=args.steps, groups=GROUPS,
                                        slow={args.ranks // 2: ("input", 3000.0)}, binary=True))
    spent: Counter[str] = Counter()
    digest = hashlib.sha256()

    def timed(part: str, work: Callable[[], Any]) -> Any:
        start = time.process_time()
        result = work()
        spent[part] += time.process_time() - start
        return result

    folders = rank_folders(root)
    with tempfile.TemporaryDirectory(prefix="layout_parts_out_") as out_dir:
        out = Path(out_dir)
        for rank, (prof, device_dir) in enumerate(folders):
            device = timed("raw read", lambda: records.read_device(device_dir))
            frame = device.trace.frame
            rows = timed("step formulas", lambda: st.compute_step_trace(frame, rank, st.max_reduce_groups(frame)))
            tasks = timed("tasks", lambda: load_device_tasks(device.device_dir, rank, device.info, device.trace))
            model = timed("rank model", lambda: build_rank_model(rank, Path(prof), device.info, rows, tasks))
            for part, build in (("trace_view.json", trace_view.trace_view_json),
                                ("communication.json", communication_json.communication_json),
                                ("communication_matrix.json", communication_json.communication_matrix_json)):
                digest.update(timed(part, lambda: build(model)).encode())
            timed("step_trace_time.csv", lambda: step_trace_time.write_step_trace_time_csv(model.steps, out / f"stt_{rank}.csv"))
            timed("profiler db", lambda: write_profiler_db(model, out / f"profiler_{rank}.db"))
            timed("analysis db", lambda: write_analysis_db(model, out / f"analysis_{rank}.db"))
    ranks = len(folders)
    print(f"{ranks} ranks x {args.steps} steps, CPU ms a rank:")
    for part, seconds in spent.items():
        print(f"  {part:26s} {1000 * seconds / ranks:7.1f}")
    print(f"  {'total':26s} {1000 * sum(spent.values()) / ranks:7.1f}")
    if args.digest:
        print(f"digest of the JSON texts: {digest.hexdigest()}")


if __name__ == "__main__":
    main()
