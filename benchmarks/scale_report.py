"""Wall time and peak memory of ``npu-tf-prof report`` / ``summary`` / ``view`` as one device's run grows.

Raw data: ``npu_tf_profiling.testing.step_synthetic`` writes a PROF folder of N
iterations as the runtime does (binary ``training_trace.bin`` frames from the
package's own encoder; one GetNext, one all-reduce, 5% noise per phase). Each
command runs as its own process (``python -m npu_tf_profiling.cli ...``); wall
time and the child's peak RSS come from ``os.wait4``'s rusage. ``report``
starts from no reports (its output folder and rank folders are removed before
each round), as the first ``report`` after a job does.

Printed: per size and command, the median wall time, CPU time (user + system:
steadier than wall time on a loaded machine) and peak RSS over the rounds
(each round listed too), the largest file the report wrote, and the
slope of a log-log fit of time and memory against the iteration count (1 =
linear). Targets (issue 39): report at 1M iterations <= 20 s and <= 1 GB,
growing linearly; no JSON or CSV file over 256 MB.

``--baseline DIR`` runs each command also with the package found in DIR (a
checkout of older code, e.g. ``git worktree add /tmp/old <commit>``),
alternating with this checkout in every round, so the two CPU times are
measured side by side under the same load.

Usage (``benchmarks/scale.py report ...`` dispatches here):
    .venv/bin/python benchmarks/scale_report.py [--iterations 1000 100000 1000000] [--rounds 3]
        [--commands report summary view] [--workdir DIR] [--baseline DIR]
"""
from __future__ import annotations

import argparse
import math
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from npu_tf_profiling.raw_format import layout  # noqa: E402
from npu_tf_profiling.testing.step_synthetic import StepPlan, write_step_prof_dir  # noqa: E402

COMMANDS = ("report", "summary", "view")


def _clear_reports(root: Path, prof: Path) -> None:
    shutil.rmtree(layout.report_dir(prof), ignore_errors=True)
    for folder in root.glob("*_ascend_pt"):
        shutil.rmtree(folder)


def run_command(command: str, prof: Path, code: Path = REPO) -> tuple[float, float, float]:
    """One ``npu-tf-prof COMMAND PROF`` in a fresh process with the package of ``code``: (wall s, peak RSS MiB, CPU s)."""
    argv = [sys.executable, "-m", "npu_tf_profiling.cli", command, str(prof)]
    started = time.perf_counter()
    env = dict(os.environ, PYTHONPATH=str(code))
    # Run from ``code``: ``python -m`` puts the working directory first on sys.path, ahead of PYTHONPATH.
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env, cwd=code)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    err = proc.stderr.read()
    proc.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"{' '.join(argv)} failed:\n{err[-3000:]}")
    return wall, usage.ru_maxrss / 1024.0, usage.ru_utime + usage.ru_stime


def largest_file(root: Path) -> tuple[str, int]:
    """The biggest file under ``root`` that is not raw data (name, bytes)."""
    files = [p for p in root.rglob("*") if p.is_file() and layout.DATA_DIR not in p.parts]
    if not files:
        return "-", 0
    biggest = max(files, key=lambda p: p.stat().st_size)
    return biggest.name, biggest.stat().st_size


def slope(xs: list[float], ys: list[float]) -> float:
    """Least-squares slope of log(y) against log(x)."""
    lx, ly = [math.log(x) for x in xs], [math.log(y) for y in ys]
    mx, my = statistics.fmean(lx), statistics.fmean(ly)
    return sum((a - mx) * (b - my) for a, b in zip(lx, ly)) / sum((a - mx) ** 2 for a in lx)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="scale_report", description=__doc__.split("\n\n")[0])
    parser.add_argument("--iterations", type=int, nargs="+", default=[1_000, 100_000, 1_000_000])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--commands", nargs="+", choices=COMMANDS, default=list(COMMANDS))
    parser.add_argument("--workdir", type=Path, help="where the synthetic runs go (default: a temporary folder)")
    parser.add_argument("--baseline", type=Path, help="a checkout of older code, run alternately with this one")
    parser.add_argument("--step-counter", action="store_true",
                        help="records carry a global step, as a data-parallel job's do (issue 50's second shape)")
    args = parser.parse_args(argv)
    print(f"# {platform.node()} {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, "
          f"Python {platform.python_version()}, load average {os.getloadavg()[0]:.1f}")
    workdir = Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix="scale_report_"))
    medians: dict[str, list[tuple[int, float, float, float]]] = {c: [] for c in args.commands}
    try:
        for n in args.iterations:
            root = workdir / f"it{n}"
            shutil.rmtree(root, ignore_errors=True)
            clock = time.perf_counter()
            prof = write_step_prof_dir(root, StepPlan(iterations=n, noise=0.05, global_step=1 if args.step_counter else None))
            raw_mb = sum(p.stat().st_size for p in prof.rglob("*") if p.is_file()) / 1e6
            print(f"\n{n} iterations: raw {raw_mb:.1f} MB, made in {time.perf_counter() - clock:.1f} s")
            for command in args.commands:
                runs, baseline = [], []
                for _ in range(args.rounds):
                    for code, into in ((args.baseline, baseline), (REPO, runs)):  # this checkout last: its files are measured
                        if code is None:
                            continue
                        if command == "report":
                            _clear_reports(root, prof)
                        into.append(run_command(command, prof, code))
                if baseline:
                    shown = ", ".join(f"{c:.2f} cpu s/{m:.0f} MiB" for _, m, c in baseline)
                    print(f"  {command:8s} baseline {args.baseline}: median {statistics.median(r[2] for r in baseline):7.2f} cpu s "
                          f"{statistics.median(r[1] for r in baseline):7.0f} MiB  (runs: {shown})")
                wall = statistics.median(r[0] for r in runs)
                rss = statistics.median(r[1] for r in runs)
                cpu = statistics.median(r[2] for r in runs)
                medians[command].append((n, wall, rss, cpu))
                shown = ", ".join(f"{w:.2f} s/{c:.2f} cpu s/{m:.0f} MiB" for w, m, c in runs)
                extra = ""
                if command == "report":
                    name, size = largest_file(root)
                    extra = f"; largest file {name} {size / 1e6:.1f} MB; load average {os.getloadavg()[0]:.1f}"
                print(f"  {command:8s} median {wall:7.2f} s {cpu:7.2f} cpu s {rss:7.0f} MiB  (runs: {shown}){extra}")
            shutil.rmtree(root, ignore_errors=True)
    finally:
        if not args.workdir:
            shutil.rmtree(workdir, ignore_errors=True)
    if len(args.iterations) > 1:
        print("\nlog-log slope against iterations (1 = linear):")
        for command, rows in medians.items():
            ns = [r[0] for r in rows]
            print(f"  {command:8s} time {slope(ns, [r[1] for r in rows]):.2f}  cpu {slope(ns, [r[3] for r in rows]):.2f}  "
                  f"peak RSS {slope(ns, [r[2] for r in rows]):.2f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
