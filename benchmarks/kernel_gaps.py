"""Where a call's time goes, kernel by kernel: plain against profiled TF2 steps under TensorFlow's profiler.

Ad hoc. COPIES plain and COPIES profiled step functions (tf2_models) are called CALLS times each,
in a shuffled order, under `tf.profiler.experimental` at host tracer level 3 (every kernel), with
an eager `tf.timestamp()` between calls to tell the calls apart in the trace. Each call's kernels
are read with the package's XPlane reader (`reports/task/xspace.py`). Printed per function, the
medians over its calls: the span (first kernel's start to last kernel's end), the time some kernel
was running (busy), the rest (idle), the kernel count, the package's own kernels and their time,
how often the next kernel ran on another thread, and the gaps over 5 µs.

Level 3 slows every kernel, so the figures describe the traced run, not the untraced step.

Usage:
    .venv/bin/python benchmarks/kernel_gaps.py MODEL COPIES CALLS
    e.g. .venv/bin/python benchmarks/kernel_gaps.py tf2_loop_mlp 2 40
"""
from __future__ import annotations

import atexit
import os
import random
import shutil
import statistics
import sys
import tempfile
from pathlib import Path

OUTPUT = Path(tempfile.mkdtemp(prefix="kernel_gaps_"))
atexit.register(shutil.rmtree, OUTPUT, True)  # after the package's exit handler (registered on its import) wrote there
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import tensorflow as tf  # noqa: E402

import npu_tf_profiling  # noqa: E402
from npu_tf_profiling.graph_points.own_ops import is_own_op  # noqa: E402
from npu_tf_profiling.reports.task.xspace import Kernel, host_trace  # noqa: E402
from tf2_models import TF2_BUILDERS  # noqa: E402

WARM_CALLS = 200
GAP_US = 5.0


def _call_figures(kernels: list[Kernel]) -> dict[str, float]:
    """One call's figures from its kernels (sorted by start)."""
    span = max(k.end_us for k in kernels) - kernels[0].start_us
    busy, gaps = 0.0, []
    start, end = kernels[0].start_us, kernels[0].end_us
    for kernel in kernels[1:]:
        if kernel.start_us > end:
            busy += end - start
            gaps.append(kernel.start_us - end)
            start = kernel.start_us
        end = max(end, kernel.end_us)
    busy += end - start
    own = [k for k in kernels if is_own_op(k.name)]
    long_gaps = [g for g in gaps if g > GAP_US]
    return {
        "span": span, "busy": busy, "idle": span - busy, "kernels": len(kernels), "own": len(own),
        "own_us": sum(k.end_us - k.start_us for k in own),
        "thread_switches": sum(a.thread != b.thread for a, b in zip(kernels, kernels[1:])),
        "gaps": len(long_gaps), "gaps_us": sum(long_gaps),
    }


def main() -> None:
    model, copies, calls = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    runners = []
    for _ in range(copies):
        for profiled in (False, True):
            options = {"output": str(OUTPUT / "prof"), "training_trace": "on"} if profiled else None
            npu_tf_profiling.start_tf2_profiling(options, enable_profiling=profiled)
            runners.append(("profiled" if profiled else "plain", TF2_BUILDERS[model]()[0]))
    for _ in range(WARM_CALLS):
        for _, step in runners:
            step()
    order = [i for _ in range(calls) for i in random.sample(range(len(runners)), len(runners))]
    tf.profiler.experimental.start(str(OUTPUT / "trace"), options=tf.profiler.experimental.ProfilerOptions(host_tracer_level=3))
    for i in order:
        tf.timestamp().numpy()
        runners[i][1]()
    tf.timestamp().numpy()
    tf.profiler.experimental.stop()
    (path,) = (OUTPUT / "trace").glob("plugins/profile/*/*.xplane.pb")
    trace = host_trace(path.read_bytes())
    if len(trace.stamps) != len(order) + 1:
        sys.exit(f"the trace holds {len(trace.stamps)} of the {len(order) + 1} eager stamps between the calls")
    figures: list[list[dict[str, float]]] = [[] for _ in runners]
    for i, (before, after) in zip(order, zip(trace.stamps, trace.stamps[1:])):
        inside = [k for k in trace.kernels if before[1] < k.start_us < after[0]]
        if inside:
            figures[i].append(_call_figures(inside))
    for (name, _), calls_figures in zip(runners, figures):
        median = {key: statistics.median(f[key] for f in calls_figures) for key in calls_figures[0]}
        print(f"{name:9s} span {median['span']:7.1f} µs, busy {median['busy']:7.1f}, idle {median['idle']:6.1f}, "
              f"kernels {median['kernels']:5.0f} (own {median['own']:.0f}, {median['own_us']:.1f} µs), "
              f"thread switches {median['thread_switches']:4.0f}, gaps over {GAP_US:.0f} µs {median['gaps']:.0f} "
              f"({median['gaps_us']:.1f} µs)")


if __name__ == "__main__":
    main()
