"""What the package's process-wide call hook adds to each `tf.function` call, which overhead.py cannot see.

Once a TF2 step is profiled, every `Function.__call__` of the process goes through the package's
wrapper (`runtime/functions/host_reads.py`: the batches read on the host since the previous call,
and task_trace's window). overhead.py compares profiled and plain functions in *one* process, so
both sides pay it there; against an unprofiled process it is extra. Here the same profiled tiny
steps are called through the wrapper and through the method it wraps, in pairs of adjacent
visits (20 calls each, in a random order), and the difference of the visits' medians is reported,
beside the same pairs with the wrapped method on both sides (the noise floor). A tiny
`tf.function` that is not a step (an evaluation helper) is measured the same way: its calls are
timed and written to other_runs.jsonl (`runtime/other_runs.py`), one line each.

Usage:
    .venv/bin/python benchmarks/call_hook_cost.py [ROUNDS]     (default 300; 3 step functions a round)
"""
from __future__ import annotations

import atexit
import os
import random
import shutil
import statistics
import sys
import tempfile
import time

# The profiled steps' output, removed at exit after the package's exit handler (registered on its import) wrote there.
OUTPUT = tempfile.mkdtemp(prefix="call_hook_")
atexit.register(shutil.rmtree, OUTPUT, True)
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
from tensorflow.python.eager.polymorphic_function.polymorphic_function import Function  # noqa: E402

import npu_tf_profiling  # noqa: E402
from tf2_models import TF2_BUILDERS  # noqa: E402

CALLS_PER_VISIT = 20


def _visit(step, call_method) -> float:
    """The median time of CALLS_PER_VISIT calls of `step`, with `Function.__call__` set to `call_method`."""
    Function.__call__ = call_method
    times = []
    for _ in range(CALLS_PER_VISIT):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def _pair(step, method, unhooked) -> float:
    """Two adjacent visits of `step` in a random order: µs a call with `method` minus with `unhooked`."""
    if random.random() < 0.5:
        mine = _visit(step, method)
        theirs = _visit(step, unhooked)
    else:
        theirs = _visit(step, unhooked)
        mine = _visit(step, method)
    return (mine - theirs) * 1e6


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 300
    npu_tf_profiling.start_tf2_profiling({"output": OUTPUT, "training_trace": "on"})
    steps = [TF2_BUILDERS["tf2_tiny"]()[0] for _ in range(3)]  # the first trace installs the hook
    import tensorflow as tf

    value = tf.constant([1.0, 2.0])
    helper_function = tf.function(lambda: tf.reduce_sum(value * 2.0))
    helper = helper_function  # not a step: each call is timed into other_runs.jsonl
    hooked = Function.__call__
    if not hasattr(hooked, "__npu_tf_profiling_wrapped__"):
        sys.exit("the call hook is not installed: nothing to measure")
    unhooked = hooked.__wrapped__
    methods = {"the call hook adds": hooked, "noise floor (unhooked against unhooked)": unhooked}
    pairs: dict[str, list[float]] = {label: [] for label in methods}
    pairs["a non-step call's hook (timed, one other_runs line)"] = []
    helper()
    try:
        for _ in range(rounds):
            for step in steps:
                for label in random.sample(list(methods), 2):
                    pairs[label].append(_pair(step, methods[label], unhooked))
            pairs["a non-step call's hook (timed, one other_runs line)"].append(_pair(helper, hooked, unhooked))
    finally:
        Function.__call__ = hooked
    for label, differences in pairs.items():
        differences.sort()
        n = len(differences)
        print(f"{label}: {statistics.median(differences):+.2f} µs a call (median of {n} pairs; "
              f"quartiles {differences[n // 4]:+.2f} .. {differences[3 * n // 4]:+.2f})")


if __name__ == "__main__":
    main()
