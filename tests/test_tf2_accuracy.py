"""The TensorFlow 2 step trace against TensorFlow's own profiler on the same iterations.

The issue's target is p95 within 20 µs. TensorFlow's trace is read at two host tracer
levels (tests/scripts/tf2_accuracy.py says why): FP Start against level 2, BP End and
Iteration End against level 3, which holds every kernel. Measured on 2 cores
(benchmarks/history/2026-12-03-tf2-bp-end-outside-loops.md),
9 runs on 2.15: FP Start median 2.3-10 µs, p95 3.3-5.5 µs in 7 runs and 15.8-50.1 in two (it
is the batch's end stamp, early by the first layer's weight reads and the executor's dispatch,
`probes.start_stamp`; the misses come from a few calls of 100 late by 50 µs or more, not
diagnosed); BP End median 0.25-1.0 µs, p95 1.0-4.7 µs in 7 runs, 19.7 and 22.0 in two (the last
gradient's update waits on the stamp: `probes.last_of_stamp`); Iteration End median 0.25-0.5 µs,
p95 0.8-3.0 µs. On TF 2.21 (`make check-latest`, 8 runs) Iteration End's tail is heavier, with
the code before that BP change too, not diagnosed: p95 4.3-107 µs, and one run's median 73.8 µs
(it failed the median bound); there the level-3 trace's events match only 7 to 26 of the ~330 ops
the end waits on, and 3-4 of the 10 gradient ops, so on 2.16+ Iteration End is printed, not
held. The test holds every other median within 30 µs and p95 within 200 µs (400 µs on TF
2.16+; one run in about 16 on 2.15 failed a 100 µs bound, output not kept), as regression
guards, not as the target.

tests/scripts/tf2_accuracy.py profiles a custom `tf.function` step (an MLP, and a GAN step:
a generator on noise, a critic on the batch and on its output, two tapes and two optimizers,
whose FP is the generator's first layer and BP End every tape's last gradient; and that GAN step returning
nothing, whose Iteration End waits on every update, issue 46) with the
package while `tf.profiler.experimental` traces 100 of its calls, and prints
TensorFlow's times for them (the fp op's start, the last gradient op's end, the
end of the last model op the iteration end waits on), mapped to the epoch by
eager `tf.timestamp()` anchors inside the trace. Each is held against the row
of the same call. As in the Session accuracy test, on a run during which other
processes took CPU (`tests/helpers/host_busy.py`) the p95 may reach
LOADED_P95_FACTOR times its bound (a thread preempted between an op and its
stamp); the medians are held always. One CI run failed the bound at a load
average of 1.7 (BP End p95 258 µs, median 8); on this idle host 8 runs gave
BP End p95 9.3-21.7 µs (2026-12-07; `pytest -s -k gan_no_return` on this file, printed
line "|row - tf.profiler|").
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests.helpers.host_busy import OthersCpu
from tests.helpers.trace_files import raw_records

pytestmark = pytest.mark.timing

SCRIPT = Path(__file__).parent / "scripts" / "tf2_accuracy.py"
WARMUP, ITERATIONS = 150, 100  # past the executor's first ~100 runs, where every kernel is sent to the thread pool
MEDIAN_US = {"fp_start": 30.0, "bp_end": 30.0, "iteration_end": 30.0}  # regression guards (module docstring)
P95_US = {"fp_start": 200.0, "bp_end": 200.0, "iteration_end": 200.0}
LATEST_P95_US = 400.0  # TF 2.16+ (check-latest): the same medians, a heavier tail (module docstring)
LOADED_P95_FACTOR = 2.0
# The clock mapping's error (half an eager tf.timestamp kernel's run): measured on an idle 2-core machine on 2026-12-06,
# the same before and after that day's changes, 9.1 to 25.4 µs in 16 windows of 8 runs; the 10 µs bound held before
# failed there in 3 runs of 4 of the unchanged code. The mapping shifts every difference of a window by one constant
# within that error, so a median is held to its guard plus its window's anchor error.
ANCHOR_ERROR_US = 40.0
POINTS = ("fp_start", "bp_end", "iteration_end")
REFERENCE_LEVEL = {"fp_start": "2", "bp_end": "3", "iteration_end": "3"}  # the tracer level each point is read at
# The calls a point must be compared on. Level 3 holds every kernel: 75 of 100. Level 2 keeps a kernel at TensorFlow's
# cost model's discretion: the GAN step's fp op had an event in 71 of 100 calls in one fresh-clone suite run (the
# MLP's, in none of 100 once); a p95 needs 20.
MIN_CALLS = {"2": 20, "3": 75}


@pytest.mark.timeout(300)
@pytest.mark.parametrize("step", ["mlp", "gan", "gan_no_return"])
def test_tf2_rows_match_tensorflow_profiler(tmp_path: Path, step: str) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PROFILING_")}
    with OthersCpu() as others:
        done = subprocess.run([sys.executable, str(SCRIPT), str(tmp_path), str(WARMUP), str(ITERATIONS), step], env=env,
                              capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    printed = json.loads(done.stdout.splitlines()[-1])
    windows, tf_2_16_or_later = printed["windows"], tuple(int(v) for v in printed["tensorflow"].split(".")[:2]) >= (2, 16)
    print("anchor error (us):", {level: w["anchor_error_us"] for level, w in windows.items()})
    # The clock mapping's error is half an eager tf.timestamp kernel's run (see the script): below ANCHOR_ERROR_US, or
    # nothing below means much.
    assert all(w["anchor_error_us"] < ANCHOR_ERROR_US and len(w["calls"]) == ITERATIONS for w in windows.values())
    # Level 3 records every kernel run, but the trace may still lack events: on TF 2.15 every call had all of them
    # in the runs measured; on 2.21 calls had 3 to 9 of the 10 gradient ops. Every call runs the same ops, so a
    # complete call holds as many events of a point's ops as the window's fullest call: only those are compared
    # (a run whose every call lacks the same events passes this filter: see the 2.16+ rule below).
    complete = {"bp_end": "bp_events", "iteration_end": "end_events"}
    calls3 = windows["3"]["calls"]
    fullest = {p: max(c[key] for c in calls3) for p, key in complete.items()}
    print("level-3 calls with every event:", {p: sum(c[complete[p]] == fullest[p] for c in calls3) for p in complete},
          "events a call:", {p: sorted({c[key] for c in calls3}) for p, key in complete.items()})
    rows = {r["run"]: r for r in raw_records(tmp_path)}
    pairs = {p: [(rows[windows[level]["first_run"] + i], call) for i, call in enumerate(windows[level]["calls"])
                 if p not in complete or call[complete[p]] == fullest[p]]
             for p, level in REFERENCE_LEVEL.items()}
    signed = {p: np.array([row[p] - call[p] for row, call in pairs[p] if call[p] is not None]) for p in POINTS}
    # Level 2 may lack the fp op's event in a call (or, once in a fresh-clone suite run, in all 100 of them).
    # A point with no events cannot be compared: left out with a line saying so.
    unseen = [p for p, e in signed.items() if len(e) == 0]
    if unseen:
        print(f"tf.profiler's trace holds no event of {unseen}: not compared this run")
    signed = {p: e for p, e in signed.items() if len(e)}
    held = set(signed)
    if tf_2_16_or_later:
        # A point TensorFlow's own trace is too incomplete to read from is printed, not held. So is Iteration End:
        # there the level-3 trace's events match only 7 to 26 of the ~330 ops the end waits on a call (2.15: all of
        # them), a subset varying from run to run (in one run none of Adam's updates; dropped events or other names,
        # not diagnosed), so whole runs read it early by up to ~60 µs, which the fullest-call filter cannot see.
        held -= {p for p, e in signed.items() if len(e) < 0.75 * ITERATIONS} | {"iteration_end"}
        print(f"TF 2.16+: only {sorted(held)} held this run")
    assert len(unseen) <= 1 and held and all(len(signed[p]) >= MIN_CALLS[REFERENCE_LEVEL[p]] for p in held), \
        {p: len(e) for p, e in signed.items()}
    p95 = {p: float(np.percentile(np.abs(e), 95)) for p, e in signed.items()}
    medians = {p: float(np.median(np.abs(e))) for p, e in signed.items()}
    print("|row - tf.profiler| (us): p95", p95, "median", medians,
          "signed median", {p: float(np.median(e)) for p, e in signed.items()}, others)
    factor = 1 if others.quiet else LOADED_P95_FACTOR
    bounds = {p: LATEST_P95_US for p in POINTS} if tf_2_16_or_later else P95_US
    for point in held:
        mapping = windows[REFERENCE_LEVEL[point]]["anchor_error_us"]
        assert medians[point] <= MEDIAN_US[point] + mapping and p95[point] <= factor * bounds[point] + mapping, \
            (point, medians, p95, mapping, others)
