"""Cost of the start-up hook (npu_tf_profiling_autostart.pth) on `python -c pass` when PROFILING_MODE is unset.

Interleaved rounds of two interpreters that differ only in whether the hook's site
directory holds the .pth file (`python -S -c "import site; site.addsitedir(D)"`),
so the difference is the hook's own cost. Also times the hook line in-process.
Target: under 5 ms (it should be microseconds).

    .venv/bin/python benchmarks/startup_hook.py [--rounds 30]
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import timeit
from pathlib import Path

PTH = Path(__file__).resolve().parent.parent / "npu_tf_profiling_autostart.pth"


def run_once(site_dir: str, env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, "-S", "-c", f"import site; site.addsitedir({site_dir!r})"], env=env, check=True)
    return time.perf_counter() - start


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=30)
    args = parser.parse_args()
    env = {k: v for k, v in os.environ.items() if k != "PROFILING_MODE"}
    with tempfile.TemporaryDirectory() as with_hook, tempfile.TemporaryDirectory() as without_hook:
        shutil.copy(PTH, with_hook)
        diffs, base = [], []
        for _ in range(args.rounds):
            a = run_once(without_hook, env)
            b = run_once(with_hook, env)
            base.append(a)
            diffs.append(b - a)
    line = PTH.read_text().strip()
    per_exec = timeit.timeit(lambda: exec(line, {}), number=2000) / 2000
    print(f"python -S + addsitedir, median start-up without hook: {statistics.median(base) * 1e3:.2f} ms")
    print(f"hook cost, median of {args.rounds} interleaved paired differences: {statistics.median(diffs) * 1e3:+.3f} ms")
    print(f"hook line executed in-process (PROFILING_MODE unset): {per_exec * 1e6:.1f} us")
    return 0


if __name__ == "__main__":
    sys.exit(main())
