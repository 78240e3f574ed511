"""Ad hoc bisection of a TF2 step's profiling cost: profiled variants with a probe group left out, against plain steps.

One process; per copy, two plain step functions and one of each variant (each its own model
and traced function, from tf2_models), visited in a shuffled order each round, a visit being
a few steps. Printed: each group's mean of its functions' medians, against the plain mean.
The variants patch the package's probe building for the functions traced while they are set:

  current    the probes as they are
  nobpwait   the BP stamp gates no update (`every_op_runs` off)
  nogetnext  no GetNext probes (the step is then watched for host reads instead)
  nofp       no FP Start probe
  nobp       no BP End probe

It has no noise floor or interval of its own: use it to choose what overhead.py should measure.

Usage:
    .venv/bin/python benchmarks/probe_variants.py MODEL COPIES ROUNDS VARIANT[,VARIANT...]
    e.g. .venv/bin/python benchmarks/probe_variants.py tf2_fit_mlp 3 100 current,nobpwait
"""
from __future__ import annotations

import dataclasses
import os
import random
import statistics
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import npu_tf_profiling  # noqa: E402
from npu_tf_profiling.runtime import probes  # noqa: E402
from npu_tf_profiling.runtime.functions import transform  # noqa: E402
from tf2_models import TF2_BUILDERS, TF2_STEPS_PER_VISIT  # noqa: E402

VARIANT = {"name": "plain"}  # the variant the functions traced now get
_last_of_stamp, _build_probes = probes._Builder.last_of_stamp, probes.build_probes


def _last_of_stamp_variant(self, waits, also_after, name, every_op_runs=False):
    return _last_of_stamp(self, waits, also_after, name, every_op_runs and VARIANT["name"] != "nobpwait")


def _build_probes_variant(graph, points, index, **options):
    left_out = {"nogetnext": {"get_next": ()}, "nofp": {"fp": None}, "nobp": {"bp": None, "bp_inputs": ()}}
    return _build_probes(graph, dataclasses.replace(points, **left_out.get(VARIANT["name"], {})), index, **options)


def main() -> None:
    model, copies, rounds, variants = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4].split(",")
    probes._Builder.last_of_stamp = _last_of_stamp_variant
    transform.build_probes = _build_probes_variant
    runners = []
    for _ in range(copies):
        for name in ["plain", "plain", *variants]:
            VARIANT["name"] = name
            options = None if name == "plain" else {"output": "/tmp/probe_variants_out", "training_trace": "on"}
            npu_tf_profiling.start_tf2_profiling(options, enable_profiling=options is not None)
            runners.append((name, TF2_BUILDERS[model]()[0]))
    for _ in range(100):
        for _, step in runners:
            step()
    medians: list[list[float]] = [[] for _ in runners]
    for _ in range(rounds):
        for i in random.sample(range(len(runners)), len(runners)):
            times = []
            for _ in range(TF2_STEPS_PER_VISIT[model]):
                start = time.perf_counter()
                runners[i][1]()
                times.append(time.perf_counter() - start)
            medians[i].append(statistics.median(times))
    groups: dict[str, list[float]] = {}
    for (name, _), visits in zip(runners, medians):
        groups.setdefault(name, []).append(statistics.median(visits) * 1e6)
    base = statistics.mean(groups["plain"])
    for name, values in groups.items():
        mean = statistics.mean(values)
        print(f"{name:10s} {mean:8.1f} µs ({mean / base - 1:+.2%}, {mean - base:+.1f} µs)  functions: "
              + " ".join(f"{v:.0f}" for v in values))


if __name__ == "__main__":
    main()
