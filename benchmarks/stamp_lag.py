"""When a profiled TF2 step's stamps are taken, counted from the host's call: wiring variants side by side.

Ad hoc, like probe_variants (whose variants it uses): it says *where* in a call a wiring change
moves things, which the overhead benchmarks cannot. Per call, the host's clock (`time.time()`,
the clock `tf.timestamp` reads) just before the Python call is set against the row's GetNext
start stamp and its iteration end. Each function is its own model and trace (tf2_models); they
are called in a shuffled order each round. Printed per function: the medians over its calls.

The functions' lifelong offsets (a few %, benchmarks/RESULTS.md) apply here too: a difference
between variants is worth something only where every function of one variant sits apart.

Usage:
    .venv/bin/python benchmarks/stamp_lag.py MODEL COPIES CALLS VARIANT[,VARIANT...]
    e.g. .venv/bin/python benchmarks/stamp_lag.py tf2_loop_mlp 4 300 current,gnarg
"""
from __future__ import annotations

import atexit
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

# The profiled steps' output, removed at exit *after* the package's own exit handler has written its
# reports there (atexit runs last-registered first, and the package registers its handler on import).
OUTPUT = Path(tempfile.mkdtemp(prefix="stamp_lag_"))
atexit.register(shutil.rmtree, OUTPUT, True)

import probe_variants  # noqa: E402 - first of the others: it quiets TensorFlow's log before TensorFlow loads

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

import npu_tf_profiling  # noqa: E402
from npu_tf_profiling.raw_format import layout  # noqa: E402
from npu_tf_profiling.reports.step.records import read_training_traces  # noqa: E402
from tf2_models import TF2_BUILDERS  # noqa: E402

WARM_CALLS = 20


def _rows_by_model() -> dict[int, pd.DataFrame]:
    """Every row the run wrote, per model id, in run order (read as the reports read them)."""
    frame = read_training_traces(sorted(OUTPUT.glob("PROF_*/device_*/data/training_trace.bin"))).frame
    return {model: rows.sort_values(layout.K_RUN) for model, rows in frame.groupby(layout.K_MODEL_ID)}


def main() -> None:
    model, copies, calls, variants = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4].split(",")
    probe_variants._patch()
    runners = []
    for _ in range(copies):
        for name in variants:
            probe_variants.VARIANT.update(name=name, parts=frozenset(name.split("+")))
            npu_tf_profiling.start_tf2_profiling({"output": str(OUTPUT), "training_trace": "on"})
            runners.append((name, TF2_BUILDERS[model]()[0]))
    # Function i makes i + 1 calls more than the others: its row count tells its model id apart.
    for i, (_, step) in enumerate(runners):
        for _ in range(WARM_CALLS + i + 1):
            step()
    called: list[list[float]] = [[] for _ in runners]
    for _ in range(calls):
        for i in random.sample(range(len(runners)), len(runners)):
            called[i].append(time.time() * 1e6)
            runners[i][1]()
    time.sleep(2)  # the ring's reader drains every 0.5 s
    by_count = {len(rows): rows.tail(calls) for rows in _rows_by_model().values()}
    for i, (name, _) in enumerate(runners):
        rows = by_count.get(1 + WARM_CALLS + i + 1 + calls)  # the builder's first call is the trace
        if rows is None:
            print(f"{name:10s} no model with its call count")
            continue
        start = np.array(called[i])
        get_next = statistics.median(np.array([pairs[0][0] for pairs in rows[layout.K_GET_NEXT]]) - start)
        end = statistics.median(rows[layout.K_ITERATION_END].to_numpy() - start)
        print(f"{name:10s} GetNext start {get_next:7.1f} µs after the call, iteration end {end:7.1f} µs after it")


if __name__ == "__main__":
    main()
