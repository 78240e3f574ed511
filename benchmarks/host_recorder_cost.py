"""Cost of ``with_stack`` and ``gc_detect_threshold`` on a training step (issue 47: ≤ 1% of the MLP step).

The host recorder's thread costs the job what it takes from the training thread: the
interpreter lock while it reads a stack, and the CPU. Paired step timings cannot show a
0.5% cost on a shared machine (their noise is several %), so this measures the cost itself:

* with_stack: the sampler thread's own CPU time (its thread clock) over the samples it took,
  while the main thread trains the MLP (bench_models.py) in a deep stack; the share of the
  step is that cost times the rate (the sampler takes the lock that long, every 1/rate s);
* gc_detect_threshold: the collections the MLP step triggers (counted from gc.callbacks), and
  what the callback adds to one collection: gc.collect(0) timed with and without it, in
  interleaved blocks, CPU time (``process_time``); share = added µs x collections a step / step.

* with_stack against the step itself (``--paired-rounds R``): one session, R rounds of three
  back-to-back blocks of --block-steps steps in a shuffled order: one with a sampler running, two
  without. A round gives the sampler's cost (on / off_a - 1, of the blocks' median steps) and the
  noise floor (off_b / off_a - 1) under the same drift; the medians over rounds are reported with
  95% intervals from the rounds' order statistics. A new sampler is started for each "on" block,
  outside the timed steps.

Usage:  .venv/bin/python benchmarks/host_recorder_cost.py [--seconds 10] [--blocks 20] [--paired-rounds 0] [--block-steps 100]
"""
from __future__ import annotations

import argparse
import gc
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, str(Path(__file__).resolve().parent))

import tensorflow.compat.v1 as tf

from bench_models import BUILDERS
from host_switches_cost import interval
from npu_tf_profiling.raw_format import layout
from npu_tf_profiling.raw_format.append_writer import StorageBudget
from npu_tf_profiling.raw_format.host_samples import read_host_stacks
from npu_tf_profiling.runtime.host.gc_pauses import GcPauseRecorder
from npu_tf_profiling.runtime.host.stacks import RATE_HZ, StackRecorder


def deep(depth: int, work):  # a script's stack is tens of frames deep when it calls sess.run
    return deep(depth - 1, work) if depth else work()


def _block_median_us(sess, train_op, steps: int) -> float:
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        deep(30, lambda: sess.run(train_op))
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e6


def paired_cost(sess, train_op, rounds: int, steps: int, step_us: float) -> None:
    cost, floor = [], []
    rng = random.Random(0)
    for _ in range(rounds):
        order = ["on", "off_a", "off_b"]
        rng.shuffle(order)
        medians = {}
        for kind in order:
            recorder = None
            if kind == "on":
                recorder = StackRecorder(Path(tempfile.mkdtemp(prefix="host_recorder_cost_")), 0, StorageBudget(None),
                                         with_stack=True, gc_threshold_ms=None)
                recorder.start()
            medians[kind] = _block_median_us(sess, train_op, steps)
            if recorder is not None:
                recorder.stop()
        cost.append(medians["on"] / medians["off_a"] - 1)
        floor.append(medians["off_b"] / medians["off_a"] - 1)
    for name, values in (("with_stack on/off", cost), ("noise floor off/off", floor)):
        mid, low, high = interval(values)
        print(f"{name}: {mid * 100:+.2f}% [{low * 100:+.2f}, {high * 100:+.2f}] of the step "
              f"({mid * step_us:+.0f} us), {rounds} rounds of {steps}-step blocks")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--blocks", type=int, default=20)
    parser.add_argument("--paired-rounds", type=int, default=0)
    parser.add_argument("--block-steps", type=int, default=100)
    args = parser.parse_args()
    tf.disable_eager_execution()
    graph = tf.Graph()
    train_op = BUILDERS["mlp"](graph)
    with graph.as_default():
        init = tf.global_variables_initializer()
    sess = tf.Session(graph=graph)
    sess.run(init)
    for _ in range(50):
        sess.run(train_op)
    times = []
    for _ in range(200):
        start = time.perf_counter()
        sess.run(train_op)
        times.append(time.perf_counter() - start)
    step_us = statistics.median(times) * 1e6
    print(f"MLP step: median {step_us:.0f} us (wall, this machine now)")

    out = Path(tempfile.mkdtemp(prefix="host_recorder_cost_"))
    recorder = StackRecorder(out, 0, StorageBudget(None), with_stack=True, gc_threshold_ms=None)
    recorder.start()
    clock = time.pthread_getcpuclockid(recorder._thread.ident)
    cpu0, end = time.clock_gettime(clock), time.monotonic() + args.seconds
    steps = 0
    while time.monotonic() < end:
        deep(30, lambda: sess.run(train_op))
        steps += 1
    cpu = time.clock_gettime(clock) - cpu0
    recorder.stop()
    samples = len(read_host_stacks(layout.host_stacks_path(out, 0)).times_us)
    per_sample = cpu / max(samples, 1) * 1e6
    print(f"with_stack: {samples} samples in {args.seconds:g} s ({samples / args.seconds:.0f} Hz asked {RATE_HZ}), "
          f"{steps} steps; sampler CPU {per_sample:.1f} us a sample -> {per_sample * RATE_HZ / 1e4:.2f}% of the "
          f"training thread's time at {RATE_HZ} Hz")

    if args.paired_rounds:
        paired_cost(sess, train_op, args.paired_rounds, args.block_steps, step_us)

    counter = GcPauseRecorder(0.0)
    counter.install()
    for _ in range(200):
        sess.run(train_op)
    counter.remove()
    per_step = counter.drain().count(b"\n") / 200
    with_cb, without = [], []
    for block in range(args.blocks):
        for installed in ((True, False) if block % 2 else (False, True)):
            recorder_gc = GcPauseRecorder(1e9)  # a threshold nothing reaches: the cost every collection pays
            if installed:
                recorder_gc.install()
            start = time.process_time()
            for _ in range(2000):
                gc.collect(0)
            (with_cb if installed else without).append((time.process_time() - start) / 2000 * 1e6)
            recorder_gc.remove()
    added = statistics.median(with_cb) - statistics.median(without)
    print(f"gc_detect_threshold: {per_step:.2f} collections a MLP step; gc.collect(0) {statistics.median(without):.2f} us, "
          f"+{added:.2f} us with the callback -> {added * per_step / step_us * 100:.4f}% of the step")


if __name__ == "__main__":
    main()
