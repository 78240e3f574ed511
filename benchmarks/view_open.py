"""How fast `npu-tf-prof view`'s page opens for 100,000 iterations or 4,096 ranks (target < 3 s), in headless Chromium.

Two pages, from ``npu_tf_profiling.testing.step_synthetic`` (one device, GetNext,
one all-reduce, 5% noise per phase, 20 slow iterations):
  long   --iterations (100,000): the phases are drawn as 5,000 bin means (+ the bins' maxima)
  short  100 iterations, drawn one by one: the same plotly.js to parse, almost no data,
         so it is the floor of what any page costs, and its spread the noise
With ``--cluster-ranks N``, two cluster pages instead (``testing.cluster_synthetic``,
binary frames, 4 all-reduce groups, rank N/2 slow in input):
  long   N ranks x --cluster-steps (1,000): the ranks x steps heatmaps binned to 256
         rows (each the maximum of its ranks), the per-rank medians as one series per phase,
         and the first 8 ranks' own parts
  short  2 ranks x 100 steps: the floor of a cluster page

Each round opens both pages (the order alternates per round, so a slow moment of the
machine hits both alike) in a fresh headless Chromium, and reads two numbers:
  open ms   the page's own ``data-rendered-ms``: navigation start -> the last chart drawn
            (HTML and plotly.js parsed, every chart drawn); what a user waits for
  wall s    the whole ``chromium --headless --dump-dom`` process, browser start included
The pages are built once before the rounds; ``build s`` is ``npu-tf-prof view``'s time.

Usage:
    .venv/bin/python benchmarks/view_open.py [--iterations 100000] [--rounds 5]
    .venv/bin/python benchmarks/view_open.py --cluster-ranks 4096 [--cluster-steps 1000] [--rounds 5]
"""
from __future__ import annotations

import argparse
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from npu_tf_profiling.reports.view.build import write_view
from npu_tf_profiling.reports.view.page import RENDERED_ATTRIBUTE
from npu_tf_profiling.testing.cluster_synthetic import ClusterPlan, write_cluster
from npu_tf_profiling.testing.step_synthetic import StepPlan, write_step_prof_dir

TARGET_MS = 3000
SHORT = 100


def open_once(binary: str, page: Path) -> tuple[int, float]:
    """(the page's data-rendered-ms, the browser's wall seconds) of one fresh headless Chromium."""
    with tempfile.TemporaryDirectory(prefix="view-open-") as profile:
        clock = time.perf_counter()
        done = subprocess.run(
            [binary, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run", f"--user-data-dir={profile}",
             "--host-resolver-rules=MAP * ~NOTFOUND", "--window-size=1280,2000", "--dump-dom", page.as_uri()],
            capture_output=True, text=True, timeout=120,
        )
        wall = time.perf_counter() - clock
    found = re.search(rf'{RENDERED_ATTRIBUTE}="(\d+)"', done.stdout)
    if not found:
        raise SystemExit(f"{page}: the page never finished drawing: {done.stderr[-1500:]}")
    return int(found.group(1)), wall


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--cluster-ranks", type=int, help="cluster pages of this many ranks instead (see the docstring)")
    parser.add_argument("--cluster-steps", type=int, default=1000)
    args = parser.parse_args()
    binary = shutil.which("chromium") or shutil.which("chromium-browser")
    if binary is None:
        raise SystemExit("needs headless Chromium (apt-get install chromium)")
    with tempfile.TemporaryDirectory(prefix="view-bench-") as tmp:
        pages, build = {}, {}
        sizes = ((("long", args.iterations), ("short", SHORT)) if args.cluster_ranks is None else
                 (("long", args.cluster_ranks), ("short", 2)))
        for name, n in sizes:
            if args.cluster_ranks is None:
                spikes = {i: 20_000.0 for i in range(n // 21, n, max(1, n // 21))[:20]}
                source = write_step_prof_dir(Path(tmp) / name, StepPlan(iterations=n, noise=0.05, spikes=spikes))
            else:
                source = Path(tmp) / name
                write_cluster(source, ClusterPlan(ranks=n, steps=args.cluster_steps if name == "long" else SHORT, groups=4,
                                                  slow={n // 2: ("input", 3000.0)}, binary=True))
            clock = time.perf_counter()
            pages[name] = write_view(source, Path(tmp) / f"{name}.html")
            build[name] = time.perf_counter() - clock
        results: dict[str, list[tuple[int, float]]] = {"long": [], "short": []}
        for r in range(args.rounds):
            for name in (("long", "short") if r % 2 == 0 else ("short", "long")):
                results[name].append(open_once(binary, pages[name]))
            print(f"round {r + 1}: long {results['long'][-1][0]} ms, short {results['short'][-1][0]} ms", flush=True)
        print(f"\nPython {platform.python_version()}, {subprocess.run([binary, '--version'], capture_output=True, text=True).stdout.strip()}")
        unit = "iterations" if args.cluster_ranks is None else f"ranks (x {args.cluster_steps:,} / {SHORT} steps)"
        print(f"| page | {unit} | page MB | build s | open ms median (min-max) | wall s median |")
        print("|------|-----------:|--------:|--------:|-------------------------:|--------------:|")
        for name, n in sizes:
            ms = [m for m, _ in results[name]]
            walls = [w for _, w in results[name]]
            print(f"| {name} | {n:,} | {pages[name].stat().st_size / 1e6:.1f} | {build[name]:.2f} | "
                  f"{statistics.median(ms):.0f} ({min(ms)}-{max(ms)}) | {statistics.median(walls):.2f} |")
        paired = [a[0] - b[0] for a, b in zip(results["long"], results["short"])]
        floor = [m for m, _ in results["short"]]
        print(f"\nlong - short, paired per round: median {statistics.median(paired):.0f} ms ({min(paired)}..{max(paired)}); "
              f"noise floor (short's spread): {max(floor) - min(floor)} ms")
        worst = max(m for m, _ in results["long"])
        print(f"target < {TARGET_MS} ms: {'met' if worst < TARGET_MS else 'NOT met'} (slowest round {worst} ms)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
