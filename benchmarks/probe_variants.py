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
  nocapture  profiler_capture does not watch the step's calls
  gnroot     GetNext no longer waits on its start stamp (a root op)
  gnctrl     GetNext's end stamp waits on GetNext by a control edge, not through an Assert on the batch
             (what the package does in a tf.function since 2026-12-04: the same as current there now)
  gnfewer    only a fusable consumer of the batch waits on GetNext's end stamp (through its reads)
  gnarg      a start stamp waits on the function's arguments among its op's inputs (GetNext's: the iterator)
             instead of being a root op: GetNext then started 135-165 µs later after the call, and in one
             run the loop MLP step cost +5.6% against current's +0.3%
             (benchmarks/history/2026-12-04-tf2-getnext-root-op-mlps.md)
  earlytables  the ring's two table handle ops wait on GetNext's start stamp, off the step's tail, where they
             run while GetNext works (outside loops: there the counter's lock keeps them on the tail); no
             gain on the tiny step in 3 runs (benchmarks/history/2026-12-04-ring-handles-off-tail.md)
  untouched  the step is analysed as for probes and left as it was: no probes, no reader, no watch
  A+B        both variants at once (e.g. allout+stamponly: the iteration end's stamp and nothing else)
  late...    (any name starting so) NOT profiled: a plain function built in a variant's place, the
             control for where a function is built (those built after a profiled one measured
             slower too, benchmarks/history/2026-12-03-tf2-mlp-probe-groups-trace-cost.md)

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
import tensorflow as tf

import npu_tf_profiling
from npu_tf_profiling.runtime import probes, ring
from npu_tf_profiling.runtime.functions import profiler_capture, transform
from npu_tf_profiling.runtime.ring import RingOps
from tf2_models import TF2_BUILDERS, TF2_STEPS_PER_VISIT

VARIANT = {"name": "plain", "parts": frozenset()}  # the variant the functions traced now get, and its parts
LEFT_OUT = {"nogetnext": {"get_next": ()}, "nofp": {"fp": None}, "nobp": {"bp": None, "bp_inputs": ()},
            "allout": {"get_next": (), "fp": None, "bp": None, "bp_inputs": ()}}
_last_of_stamp, _build_probes, _build_ring = probes._Builder.last_of_stamp, probes.build_probes, probes.build_ring
_read_in_the_background, _watch = transform.read_in_the_background, profiler_capture.CAPTURE.watch
_probe, _start_stamp = transform.StepTransform._probe, probes._Builder.start_stamp
_gate, _first_successor_stamp = probes._Builder.gate, probes._Builder.first_successor_stamp
FED_INPUT_TYPES = probes.FED_INPUT_TYPES
_table = ring._table


def _last_of_stamp_variant(self, waits, also_after, name, every_op_runs=False):
    return _last_of_stamp(self, waits, also_after, name, every_op_runs and "nobpwait" not in VARIANT["parts"])


def _start_stamp_variant(self, op, name, also_after=()):
    if "gnroot" in VARIANT["parts"] and name == "get_next_start":
        with tf.control_dependencies(None):
            return self.clock(name)
    if "gnarg" not in VARIANT["parts"] or self.feedable:
        return _start_stamp(self, op, name, also_after)
    try:  # start_stamp leaves out the inputs of these types: none, so it waits on the arguments too
        probes.FED_INPUT_TYPES = ()
        return _start_stamp(self, op, name, also_after)
    finally:
        probes.FED_INPUT_TYPES = FED_INPUT_TYPES


def _gate_variant(self, after, name):
    if "gnctrl" not in VARIANT["parts"]:
        return _gate(self, after, name)
    with tf.control_dependencies(None):
        return _gate(dataclasses.replace(self, data_inputs=frozenset()), after, name)


def _first_successor_stamp_variant(self, op, name, also_after):
    if "gnfewer" not in VARIANT["parts"]:
        return _first_successor_stamp(self, op, name, also_after)
    stamp = self.stamp(probes.finished(op) + [also_after], name)
    for consumer in probes.consumers(op):
        if consumer.type in probes.FUSED_COMPUTE_TYPES:
            reads = [p for p in probes.producers(consumer) if probes.is_variable_read(p) and self._wait_is_safe(p, [op])]
            self.make_wait(reads or [consumer], stamp)
    return stamp


def _build_probes_variant(graph, points, index, **options):
    left_out = {key: value for part in VARIANT["parts"] for key, value in LEFT_OUT.get(part, {}).items()}
    return _build_probes(graph, dataclasses.replace(points, **left_out), index, **options)


def _early_tables_build_ring(before_end, end_stamp, stamps, global_step, tables, count_lock):
    """build_ring with the tables' handle ops waiting on GetNext's start stamp instead of on the tail's chain."""
    anchor = stamps[0].op if stamps and stamps[0].op.name.endswith("get_next_start") else None
    if anchor is None or tables is None or count_lock:
        return _build_ring(before_end, end_stamp, stamps, global_step, tables, count_lock)

    def early_table(*args, **kwargs):
        with tf.control_dependencies(None), tf.control_dependencies([anchor]):
            return _table(*args, **kwargs)

    try:
        ring._table = early_table
        return _build_ring(before_end, end_stamp, stamps, global_step, tables, count_lock)
    finally:
        ring._table = _table


def _build_ring_variant(before_end, end_stamp, stamps, global_step, tables=None, count_lock=False):
    if "earlytables" in VARIANT["parts"]:
        return _early_tables_build_ring(before_end, end_stamp, stamps, global_step, tables, count_lock)
    if "stamponly" not in VARIANT["parts"]:
        return _build_ring(before_end, end_stamp, stamps, global_step, tables, count_lock)
    end = end_stamp(before_end)
    row = tf.stack(stamps + [end], name="row")
    with tf.control_dependencies([row.op]):
        write = tf.no_op(name="write")
    return RingOps(write=write, row=row, slots=None, rows=None, progress=None, has_step=False, keyed_by_step=False,
                   tables=tables or "", row_width=len(stamps) + 2)


def _probe_variant(self, graph, context, source, kinds, updates):
    if "untouched" in VARIANT["parts"]:
        transform.analyse(graph)  # what discovery costs the trace, and nothing added
        return None
    return _probe(self, graph, context, source, kinds, updates)


def _patch() -> None:
    transform.StepTransform._probe = _probe_variant
    probes._Builder.last_of_stamp = _last_of_stamp_variant
    probes._Builder.start_stamp = _start_stamp_variant
    probes._Builder.gate = _gate_variant
    probes._Builder.first_successor_stamp = _first_successor_stamp_variant
    probes.build_ring = _build_ring_variant
    transform.build_probes = _build_probes_variant
    transform.read_in_the_background = lambda model: None if VARIANT["parts"] & {"noreader", "stamponly"} else _read_in_the_background(model)
    profiler_capture.CAPTURE.watch = lambda function, model: None if "nocapture" in VARIANT["parts"] else _watch(function, model)


def main() -> None:
    model, copies, rounds, variants = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4].split(",")
    if len(sys.argv) > 5:
        tf.config.threading.set_inter_op_parallelism_threads(int(sys.argv[5]))
    _patch()
    runners = []
    for _ in range(copies):
        for name in ["plain", "plain", *variants]:
            VARIANT.update(name=name, parts=frozenset(name.split("+")))
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
