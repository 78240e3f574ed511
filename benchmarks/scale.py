"""Production-sized runs: wall time and peak memory as the input grows (issue 39), side by side with msprof-analyze.

Subcommands:

  cluster   `npu-tf-prof cluster` on synthetic ranks (``testing.cluster_synthetic``, binary frames, one slow rank,
            4 all-reduce groups): per size, fresh rank folders each run (no worker wrote its reports: the
            command's first call, all it writes counts), then
              local   the command with Dask's in-process scheduler, one task at a time (over 16 ranks lacking an
                      msprof-analyze folder, it names them and writes none; past 32 ranks its timeline draws the
                      ranks the verdict names and a yardstick);
              pool    the command with --scheduler processes (Dask's local scheduler, a process pool);
              again   the command (in-process) a second time, on the same folders;
              layouts the command with --layouts: it also writes every rank's msprof-analyze folder;
              dask    the command with --scheduler on a 2-worker LocalCluster (worker processes, loopback);
                      memory = the command's peak + each worker's peak;
              msprof  msprof-analyze 26.2 `cluster -m all` on the same ranks (.venv-msprof: `make msprof-analyze`),
                      on the folders `cluster --layouts` wrote (not timed);
              chain   for the big sizes, one set of fresh folders: local (first call), again, layouts, msprof in a
                      row, reported as those four modes (one data generation).
            Each figure is the command's wall time and peak RSS (/usr/bin/time, or the workers' getrusage).
            Prints a Markdown table and the log-log slope of time and memory against ranks x steps.
  report    the single-device `report` sizes: dispatches to benchmarks/scale_report.py's main(argv) (issue 39 part A),
            imported only when asked for.

Usage:
    .venv/bin/python benchmarks/scale.py cluster [--ranks 64 1024 4096] [--steps 1000] [--runs 3] [--modes local pool again dask msprof chain]
    .venv/bin/python benchmarks/scale.py report [ARGS...]
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import numpy as np  # noqa: E402

from npu_tf_profiling.testing.cluster_synthetic import ClusterPlan, total_bytes, write_cluster  # noqa: E402

CLI = [sys.executable, "-m", "npu_tf_profiling.cli"]
MSPROF = REPO / ".venv-msprof" / "bin" / "msprof-analyze"
TIME = "/usr/bin/time"
GROUPS = 4


@dataclass
class Run:
    mode: str
    ranks: int
    steps: int
    wall_s: float
    peak_mb: float


def _timed(cmd: list[str], cwd: Path) -> tuple[float, float, str]:
    """(wall s, peak RSS MB, output) of one command, measured by /usr/bin/time -f."""
    marker = "@@TIME"
    full = [TIME, "-f", f"{marker} %e %M", *cmd]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PROFILING_", "DASK_"))}
    proc = subprocess.run(full, cwd=cwd, capture_output=True, text=True, env=env)
    found = re.findall(rf"{marker} ([\d.]+) (\d+)", proc.stderr)
    if proc.returncode != 0 or not found:
        raise RuntimeError(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}")
    wall, kb = found[-1]
    return float(wall), int(kb) / 1024, proc.stdout + proc.stderr


def _fresh(tmp: Path, ranks: int, steps: int) -> Path:
    root = tmp / f"job_{ranks}x{steps}"
    shutil.rmtree(root, ignore_errors=True)
    write_cluster(root, ClusterPlan(ranks=ranks, steps=steps, groups=GROUPS, slow={ranks // 2: ("input", 3000.0)}, binary=True))
    return root


def _check(output: str, ranks: int) -> None:
    if f"SLOW RANK {ranks // 2}: cause input" not in output:
        raise RuntimeError(f"the verdict missed the slow rank:\n{output[-3000:]}")


def run_local(tmp: Path, ranks: int, steps: int) -> Run:
    root = _fresh(tmp, ranks, steps)
    wall, peak, out = _timed([*CLI, "cluster", str(root)], tmp)
    _check(out, ranks)
    return Run("local", ranks, steps, wall, peak)


def run_pool(tmp: Path, ranks: int, steps: int) -> Run:
    """Peak memory: /usr/bin/time's maximum over the command and its pool's processes (each counted alone)."""
    root = _fresh(tmp, ranks, steps)
    wall, peak, out = _timed([*CLI, "cluster", str(root), "--scheduler", "processes"], tmp)
    _check(out, ranks)
    return Run("pool", ranks, steps, wall, peak)


def run_again(tmp: Path, ranks: int, steps: int) -> Run:
    root = _fresh(tmp, ranks, steps)
    _timed([*CLI, "cluster", str(root)], tmp)
    wall, peak, out = _timed([*CLI, "cluster", str(root)], tmp)
    _check(out, ranks)
    return Run("again", ranks, steps, wall, peak)


def run_layouts(tmp: Path, ranks: int, steps: int) -> Run:
    root = _fresh(tmp, ranks, steps)
    wall, peak, out = _timed([*CLI, "cluster", str(root), "--layouts"], tmp)
    _check(out, ranks)
    return Run("layouts", ranks, steps, wall, peak)


def run_dask(tmp: Path, ranks: int, steps: int) -> Run:
    from distributed import Client, LocalCluster

    root = _fresh(tmp, ranks, steps)
    with LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address=None,
                      silence_logs=40) as cluster, Client(cluster) as client:
        wall, peak, out = _timed([*CLI, "cluster", str(root), "--scheduler", cluster.scheduler_address], tmp)
        workers = client.run(_worker_peak_mb)
    _check(out, ranks)
    return Run("dask", ranks, steps, wall, peak + sum(workers.values()))


def _worker_peak_mb() -> float:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def run_msprof(tmp: Path, ranks: int, steps: int) -> Run:
    """msprof-analyze on the rank folders `cluster --layouts` wrote (not timed here)."""
    root = _fresh(tmp, ranks, steps)
    _timed([*CLI, "cluster", str(root), "--layouts"], tmp)
    out_dir = tmp / f"msprof_{ranks}x{steps}"
    shutil.rmtree(out_dir, ignore_errors=True)
    wall, peak, _ = _timed([str(MSPROF), "cluster", "-d", str(root), "-m", "all", "-o", str(out_dir)], tmp)
    return Run("msprof", ranks, steps, wall, peak)


def run_chain(tmp: Path, ranks: int, steps: int) -> list[Run]:
    root = _fresh(tmp, ranks, steps)
    runs = []
    for mode, extra in (("local", []), ("again", []), ("layouts", ["--layouts"])):
        wall, peak, out = _timed([*CLI, "cluster", str(root), *extra], tmp)
        _check(out, ranks)
        runs.append(Run(mode, ranks, steps, wall, peak))
        print(f"  {mode}: {wall:.1f} s, {peak:.0f} MB", flush=True)
    if MSPROF.exists():
        out_dir = tmp / f"msprof_{ranks}x{steps}"
        wall, peak, _ = _timed([str(MSPROF), "cluster", "-d", str(root), "-m", "all", "-o", str(out_dir)], tmp)
        runs.append(Run("msprof", ranks, steps, wall, peak))
        print(f"  msprof: {wall:.1f} s, {peak:.0f} MB", flush=True)
        shutil.rmtree(out_dir, ignore_errors=True)
    return runs


def slope(xs: list[float], ys: list[float]) -> float:
    """The slope of log(y) against log(x): 1 is linear growth."""
    return float(np.polyfit(np.log(xs), np.log(ys), 1)[0])


def cluster_main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="scale.py cluster", description="npu-tf-prof cluster at scale")
    parser.add_argument("--ranks", type=int, nargs="+", default=[64, 1024, 4096])
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--modes", nargs="+", default=["local", "pool", "dask", "msprof"], choices=["local", "pool", "again", "layouts", "dask", "msprof", "chain"])
    args = parser.parse_args(argv)
    runners = {"local": run_local, "pool": run_pool, "again": run_again, "layouts": run_layouts, "dask": run_dask, "msprof": run_msprof}
    if "msprof" in args.modes and not MSPROF.exists():
        print(f"{MSPROF} is missing (make msprof-analyze): msprof left out")
        args.modes = [m for m in args.modes if m != "msprof"]
    runs: list[Run] = []
    with tempfile.TemporaryDirectory(prefix="scale_") as tmp_name:
        tmp = Path(tmp_name)
        for ranks in args.ranks:
            size = total_bytes(_fresh(tmp, ranks, args.steps)) / 1e6
            print(f"{ranks} ranks x {args.steps} steps: {size:.1f} MB raw (binary frames), {os.cpu_count()} CPUs", flush=True)
            for mode in args.modes:
                for _ in range(args.runs):
                    if mode == "chain":
                        runs.extend(run_chain(tmp, ranks, args.steps))
                        continue
                    run = runners[mode](tmp, ranks, args.steps)
                    print(f"  {mode}: {run.wall_s:.1f} s, {run.peak_mb:.0f} MB", flush=True)
                    runs.append(run)
            shutil.rmtree(tmp / f"job_{ranks}x{args.steps}", ignore_errors=True)
    print("\n| mode | ranks | steps | runs: wall s | median s | runs: peak MB | median MB |")
    print("|---|--:|--:|---|--:|---|--:|")
    medians: dict[str, list[tuple[int, float, float]]] = {}
    shown = [m for m in ("local", "pool", "again", "layouts", "dask", "msprof") if any(r.mode == m for r in runs)]
    for mode in shown:
        for ranks in args.ranks:
            mine = [r for r in runs if r.mode == mode and r.ranks == ranks]
            if not mine:
                continue
            wall, peak = statistics.median(r.wall_s for r in mine), statistics.median(r.peak_mb for r in mine)
            medians.setdefault(mode, []).append((ranks * args.steps, wall, peak))
            print(f"| {mode} | {ranks:,} | {args.steps:,} | {', '.join(f'{r.wall_s:.1f}' for r in mine)} | {wall:.1f} | "
                  f"{', '.join(f'{r.peak_mb:.0f}' for r in mine)} | {peak:.0f} |")
    if len(args.ranks) > 1:
        for mode, points in medians.items():
            if len(points) < 2:
                continue
            xs = [p[0] for p in points]
            print(f"{mode}: log-log slope against ranks x steps: time {slope(xs, [p[1] for p in points]):.2f}, "
                  f"memory {slope(xs, [p[2] for p in points]):.2f}")
    return 0


def report_main(argv: list[str]) -> int:
    """Part A's `report` benchmark, imported only here (it may not exist in every checkout)."""
    path = Path(__file__).with_name("scale_report.py")
    if not path.exists():
        print(f"{path} is missing: the `report` sizes come with issue 39's part A")
        return 2
    spec = importlib.util.spec_from_file_location("scale_report", path)
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(module)
    return int(module.main(argv) or 0)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    commands = {"cluster": cluster_main, "report": report_main}
    if not argv or argv[0] not in commands:
        print(__doc__)
        return 2
    started = time.perf_counter()
    code = commands[argv[0]](argv[1:])
    print(f"({time.perf_counter() - started:.0f} s in all)")
    return code


if __name__ == "__main__":
    sys.exit(main())
