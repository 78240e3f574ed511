"""What every advise case shares: `--fixed` (the variant with the knob applied), the timed loop, the result line.

A case times its training loop itself (after WARMUP steps, so tracing is left out): wall and process CPU
per step, printed as one `ADVISE_CASE {...}` line that benchmarks/advise_accuracy.py reads.
"""
from __future__ import annotations

import json
import sys
import time
from typing import Callable

WARMUP = 4
FIXED = "--fixed" in sys.argv


def timed_loop(steps: int, one_step: Callable[[int], None]) -> None:
    """Run WARMUP + `steps` steps; print the per-step wall and CPU time of the last `steps`."""
    for i in range(WARMUP):
        one_step(i)
    wall, cpu = time.perf_counter(), time.process_time()
    for i in range(WARMUP, WARMUP + steps):
        one_step(i)
    report((time.perf_counter() - wall) / steps, (time.process_time() - cpu) / steps)


def report(step_s: float, cpu_s: float) -> None:
    print("ADVISE_CASE " + json.dumps({"step_us": 1e6 * step_s, "cpu_us": 1e6 * cpu_s, "fixed": FIXED}), flush=True)
