"""What profiling adds to a TF2 step's first call: its trace, where the package probes the graph.

One process; in each round one plain and one profiled step function are built, in a random
order (each its own model and `tf.function`, from tf2_models; the build is the model, the
trace and the first call), so the two share the machine's drift. Printed per model: the median
build of each, the median of the rounds' differences with its 95% interval (order statistics),
and the package's own transform time per profiled build (`StepTransform.__call__`, every graph
it was called with during that build), which is the part the package can make faster.

    .venv/bin/python benchmarks/trace_cost.py [--models tf2_loop_mlp,tf2_fit_mlp] [--rounds 8]
"""
from __future__ import annotations

import argparse
import os
import random
import statistics
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import npu_tf_profiling
from npu_tf_profiling.runtime.functions import transform
from tf2_models import TF2_BUILDERS

OPTIONS = {"output": "/tmp/trace_cost_out", "training_trace": "on"}
TRANSFORM_SECONDS = [0.0]
_call = transform.StepTransform.__call__


def _timed_call(self: transform.StepTransform, graph) -> None:
    start = time.perf_counter()
    try:
        _call(self, graph)
    finally:
        TRANSFORM_SECONDS[0] += time.perf_counter() - start


def interval(values: list[float]) -> tuple[float, float]:
    """A 95% interval of the median from order statistics (the binomial normal approximation)."""
    ordered, n = sorted(values), len(values)
    half = 1.96 * (n ** 0.5) / 2
    low, high = max(0, int(n / 2 - half)), min(n - 1, int(n / 2 + half))
    return ordered[low], ordered[high]


def build(model: str, profiled: bool) -> tuple[float, float]:
    """One build's wall time and the transform's time in it, seconds."""
    npu_tf_profiling.start_tf2_profiling(OPTIONS if profiled else None, enable_profiling=profiled)
    TRANSFORM_SECONDS[0] = 0.0
    start = time.perf_counter()
    TF2_BUILDERS[model]()
    return time.perf_counter() - start, TRANSFORM_SECONDS[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="tf2_loop_mlp,tf2_fit_mlp")
    parser.add_argument("--rounds", type=int, default=8)
    args = parser.parse_args()
    transform.StepTransform.__call__ = _timed_call
    for model in args.models.split(","):
        build(model, False)  # the process's first build pays TensorFlow's own first-time costs
        plain, profiled, diffs, transform_s = [], [], [], []
        for _ in range(args.rounds):
            order = random.sample([False, True], 2)
            times = {mode: build(model, mode) for mode in order}
            plain.append(times[False][0])
            profiled.append(times[True][0])
            diffs.append(times[True][0] - times[False][0])
            transform_s.append(times[True][1])
        low, high = interval(diffs)
        print(f"{model}: plain {statistics.median(plain):.2f} s, profiled {statistics.median(profiled):.2f} s; "
              f"profiled - plain {statistics.median(diffs):+.2f} s ({low:+.2f} .. {high:+.2f}) over {args.rounds} rounds; "
              f"transform {statistics.median(transform_s):.3f} s a profiled build (min {min(transform_s):.3f}, max {max(transform_s):.3f})",
              flush=True)


if __name__ == "__main__":
    main()
