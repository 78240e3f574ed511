"""Ad hoc bisection of a TF2 step's profiling cost: profiled variants with a probe group left out, against plain steps.

One process; per copy, two plain step functions and one of each variant (each its own model
and traced function, from tf2_models), built in that order, then visited in a shuffled order
each round, a visit being a few steps. Printed: each group's mean of its functions' medians,
against the plain mean. The variants patch the package for the functions traced while they are set:

  current    the probes as they are
  nobpwait   the BP stamp gates no update (`every_op_runs` off)
  nogetnext  no GetNext probes (the step is then watched for host reads instead)
  nofp       no FP Start probe
  nobp       no BP End probe
  allout     none of GetNext, FP Start, BP End: the iteration end and the ring only
  stamponly  no ring tables and no reader: the row is stacked and dropped
  noreader   the ring as it is, never drained
  nocapture  task_capture does not watch the step's calls
  late...    (any name starting so) NOT profiled: a plain function built in a variant's place, the
             control for where a function is built (those built after a profiled one measured
             slower too, benchmarks/RESULTS.md)

It has no noise floor or interval of its own: use it to choose what overhead.py should measure.

Usage:
    .venv/bin/python benchmarks/probe_variants.py MODEL COPIES ROUNDS VARIANT[,VARIANT...] [INTER_OP_THREADS]
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
import tensorflow as tf  # noqa: E402

import npu_tf_profiling  # noqa: E402
from npu_tf_profiling.runtime import probes  # noqa: E402
from npu_tf_profiling.runtime.functions import task_capture, transform  # noqa: E402
from npu_tf_profiling.runtime.ring import RingOps  # noqa: E402
from tf2_models import TF2_BUILDERS, TF2_STEPS_PER_VISIT  # noqa: E402

VARIANT = {"name": "plain"}  # the variant the functions traced now get
LEFT_OUT = {"nogetnext": {"get_next": ()}, "nofp": {"fp": None}, "nobp": {"bp": None, "bp_inputs": ()},
            "allout": {"get_next": (), "fp": None, "bp": None, "bp_inputs": ()}}
_last_of_stamp, _build_probes, _build_ring = probes._Builder.last_of_stamp, probes.build_probes, probes.build_ring
_read_in_the_background, _watch = transform.read_in_the_background, task_capture.CAPTURE.watch


def _last_of_stamp_variant(self, waits, also_after, name, every_op_runs=False):
    return _last_of_stamp(self, waits, also_after, name, every_op_runs and VARIANT["name"] != "nobpwait")


def _build_probes_variant(graph, points, index, **options):
    return _build_probes(graph, dataclasses.replace(points, **LEFT_OUT.get(VARIANT["name"], {})), index, **options)


def _build_ring_variant(before_end, end_stamp, stamps, global_step, tables=None, count_lock=False):
    if VARIANT["name"] != "stamponly":
        return _build_ring(before_end, end_stamp, stamps, global_step, tables, count_lock)
    end = end_stamp(before_end)
    row = tf.stack(stamps + [end], name="row")
    with tf.control_dependencies([row.op]):
        write = tf.no_op(name="write")
    return RingOps(write=write, row=row, slots=None, rows=None, progress=None, has_step=False, keyed_by_step=False,
                   tables=tables or "", row_width=len(stamps) + 2)


def _patch() -> None:
    probes._Builder.last_of_stamp = _last_of_stamp_variant
    probes.build_ring = _build_ring_variant
    transform.build_probes = _build_probes_variant
    transform.read_in_the_background = lambda model: None if VARIANT["name"] in ("noreader", "stamponly") else _read_in_the_background(model)
    task_capture.CAPTURE.watch = lambda function, model: None if VARIANT["name"] == "nocapture" else _watch(function, model)


def main() -> None:
    model, copies, rounds, variants = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4].split(",")
    if len(sys.argv) > 5:
        tf.config.threading.set_inter_op_parallelism_threads(int(sys.argv[5]))
    _patch()
    runners = []
    for _ in range(copies):
        for name in ["plain", "plain", *variants]:
            VARIANT["name"] = name
            profiled = not name.startswith(("plain", "late"))
            options = {"output": "/tmp/probe_variants_out", "training_trace": "on"} if profiled else None
            npu_tf_profiling.start_tf2_profiling(options, enable_profiling=profiled)
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
