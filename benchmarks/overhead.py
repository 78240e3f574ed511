"""Step-time overhead of profiling: paired sessions in one process, interleaved, against a plain-vs-plain noise floor.

Every mode runs on its own copy of the graph in its own session; `none` runs PLAINS
times (three identical plain sessions by default). The profiled modes are compared
with the *median of the plain sessions* in the same round, and each plain session
with the median of the others gives the noise floor: an overhead inside that spread
is not a measured overhead.

Modes:
  none              plain session (PLAINS copies)
  training_trace    this package's step trace (the sess.run / NpuOptimizer path)
  task_unscheduled  task_trace on, its window not reached (what unscheduled iterations pay)
  task_scheduled    task_trace on every iteration (FULL_TRACE + storing the raw step stats)
  full_trace        RunOptions(trace_level=FULL_TRACE) + RunMetadata on every step
  tf_profiler       tf.profiler.experimental active while the steps run

Models:
  mlp   20 dense + batch-norm blocks, Adam, batch 64 (about 4.6k ops; ~2.6 ms a step on 2 cores)
  cnn   3 conv layers, Momentum, batch 32 (~3-13 ms a step)
  tiny  two small dense layers, SGD, batch 16 (~0.3 ms a step: per-step costs show most here)

Two measurements per model:
  steady state  --warmup steps first; then --rounds rounds, each running every session for
                --steps steps in a shuffled order; a session's round value is its median step.
  first steps   --fresh times: new graphs and sessions for every mode, then their first
                --first-steps steps interleaved step by step; the very first run (discovery,
                probe wiring, TensorFlow's executor set-up) is reported on its own.

Reported: overhead in % and in µs per step (median over rounds of the paired differences),
with the plain-vs-plain spread. `--determinism` turns on op determinism for the whole
process (every session), which measures the host-clock fallback of the step trace.

Usage:
    .venv/bin/python benchmarks/overhead.py [--models mlp,cnn,tiny] [--modes none,training_trace] [--rounds 20]
"""
from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np  # noqa: E402
import tensorflow as tf2  # noqa: E402
import tensorflow.compat.v1 as tf  # noqa: E402

import npu_tf_profiling  # noqa: E402,F401  (installs the Session integration)
from npu_tf_profiling.config.session_proto import write_request  # noqa: E402

MODES = ("none", "training_trace", "task_unscheduled", "task_scheduled", "full_trace", "tf_profiler")
PLAIN = "none"

# profiling_options per mode of this package (modes not listed here are not ours).
OUR_OPTIONS = {
    "training_trace": {"training_trace": "on"},
    # task_trace on, but the window is far ahead: measures what unscheduled iterations pay.
    "task_unscheduled": {"task_trace": "on", "start_step": 10**9, "stop_step": 10**9},
    # task_trace on every iteration: FULL_TRACE plus storing the raw step stats.
    "task_scheduled": {"task_trace": "on", "schedule": {"active": 1, "repeat": 0}},
}


def build_mlp(graph: tf.Graph) -> tf.Operation:
    with graph.as_default():
        tf.set_random_seed(0)
        data = np.random.default_rng(0).normal(size=(1024, 64)).astype(np.float32)
        x = tf.data.make_one_shot_iterator(tf.data.Dataset.from_tensor_slices(data).repeat().batch(64)).get_next()
        net = x
        for i in range(20):
            net = tf.layers.dense(net, 64, activation=tf.nn.relu, name=f"dense_{i}")
            net = tf.layers.batch_normalization(net, training=True, name=f"bn_{i}")
        loss = tf.reduce_mean(tf.square(tf.layers.dense(net, 1, name="out")))
        with tf.control_dependencies(tf.get_collection(tf.GraphKeys.UPDATE_OPS)):
            return tf.train.AdamOptimizer(1e-3).minimize(loss, global_step=tf.train.get_or_create_global_step())


def build_cnn(graph: tf.Graph) -> tf.Operation:
    with graph.as_default():
        tf.set_random_seed(0)
        images = np.random.default_rng(0).normal(size=(256, 32, 32, 3)).astype(np.float32)
        x = tf.data.make_one_shot_iterator(tf.data.Dataset.from_tensor_slices(images).repeat().batch(32)).get_next()
        net = tf.layers.conv2d(x, 32, 3, padding="same", activation=tf.nn.relu, name="conv1")
        net = tf.layers.conv2d(net, 32, 3, padding="same", activation=tf.nn.relu, name="conv2")
        net = tf.layers.max_pooling2d(net, 2, 2)
        net = tf.layers.conv2d(net, 64, 3, padding="same", activation=tf.nn.relu, name="conv3")
        net = tf.layers.flatten(tf.layers.max_pooling2d(net, 2, 2))
        loss = tf.reduce_mean(tf.square(tf.layers.dense(net, 10, name="logits")))
        return tf.train.MomentumOptimizer(0.01, 0.9).minimize(loss, global_step=tf.train.get_or_create_global_step())


def build_tiny(graph: tf.Graph) -> tf.Operation:
    with graph.as_default():
        tf.set_random_seed(0)
        data = np.random.default_rng(0).normal(size=(256, 8)).astype(np.float32)
        x = tf.data.make_one_shot_iterator(tf.data.Dataset.from_tensor_slices(data).repeat().batch(16)).get_next()
        hidden = tf.layers.dense(x, 16, activation=tf.nn.relu, name="hidden")
        loss = tf.reduce_mean(tf.square(tf.layers.dense(hidden, 1, name="out")))
        return tf.train.GradientDescentOptimizer(0.01).minimize(loss, global_step=tf.train.get_or_create_global_step())


BUILDERS = {"mlp": build_mlp, "cnn": build_cnn, "tiny": build_tiny}


class Runner:
    """One session of one mode: its own graph, and how one step is run."""

    def __init__(self, model: str, mode: str, output: str, label: str) -> None:
        self.mode = mode
        self.label = label
        self.graph = tf.Graph()
        self.train_op = BUILDERS[model](self.graph)
        with self.graph.as_default():
            init = tf.global_variables_initializer()
        config = tf.ConfigProto()
        if mode in OUR_OPTIONS:
            write_request(config, True, json.dumps({"output": os.path.join(output, label), **OUR_OPTIONS[mode]}))
        self.session = tf.Session(graph=self.graph, config=config)
        self.session.run(init)
        self.ops = len(self.graph.get_operations())
        self._logdir = os.path.join(output, f"tf_profiler_{label}")
        self._kwargs: dict = {}
        if mode == "full_trace":
            self._kwargs = {"options": tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)}

    def step(self) -> float:
        if self.mode == "full_trace":
            self._kwargs["run_metadata"] = tf.RunMetadata()
        start = time.perf_counter()
        self.session.run(self.train_op, **self._kwargs)
        return time.perf_counter() - start

    def steps(self, count: int) -> list[float]:
        if self.mode == "tf_profiler":
            tf2.profiler.experimental.start(self._logdir)
        try:
            return [self.step() for _ in range(count)]
        finally:
            if self.mode == "tf_profiler":
                tf2.profiler.experimental.stop()


def make_runners(model: str, modes: list[str], plains: int, output: str) -> list[Runner]:
    runners = []
    for mode in modes:
        copies = plains if mode == PLAIN else 1
        runners.extend(Runner(model, mode, output, f"{mode}_{i}" if copies > 1 else mode) for i in range(copies))
    return runners


def paired(values: dict[str, list[float]], label: str, plain_labels: list[str]) -> tuple[list[float], list[float]]:
    """Per round: (ratio - 1, difference) of `label` against the median of the plain sessions (others than itself)."""
    others = [p for p in plain_labels if p != label]
    ratios, diffs = [], []
    for i, value in enumerate(values[label]):
        reference = statistics.median(values[p][i] for p in others)
        ratios.append(value / reference - 1)
        diffs.append(value - reference)
    return ratios, diffs


def report(title: str, values: dict[str, list[float]], runners: list[Runner]) -> None:
    plain_labels = [r.label for r in runners if r.mode == PLAIN]
    print(f"\n{title}")
    print(f"{'session':<20}{'median ms':>11}{'overhead':>10}{'µs/step':>10}   per-round (ms)")
    floor = []
    for runner in runners:
        label = runner.label
        rounds_text = " ".join(f"{v * 1e3:.2f}" for v in values[label][:12]) + (" ..." if len(values[label]) > 12 else "")
        median = statistics.median(values[label]) * 1e3
        if len(plain_labels) > 1 or runner.mode != PLAIN:
            ratios, diffs = paired(values, label, plain_labels)
            ratio, diff = statistics.median(ratios), statistics.median(diffs)
            if runner.mode == PLAIN:
                floor.append(ratio)
            print(f"{label:<20}{median:>11.3f}{ratio * 100:>+9.2f}%{diff * 1e6:>+10.1f}   {rounds_text}")
        else:
            print(f"{label:<20}{median:>11.3f}{'':>10}{'':>10}   {rounds_text}")
    if floor:
        print(f"noise floor (each plain session vs the median of the others): {min(floor) * 100:+.2f}% .. {max(floor) * 100:+.2f}%")


def steady_state(model: str, modes: list[str], args: argparse.Namespace, output: str) -> None:
    runners = make_runners(model, modes, args.plains, output)
    for runner in runners:
        runner.steps(args.warmup)
    values: dict[str, list[float]] = {r.label: [] for r in runners}
    order = list(runners)
    rng = random.Random(0)
    for _ in range(args.rounds):
        rng.shuffle(order)
        for runner in order:
            values[runner.label].append(statistics.median(runner.steps(args.steps)))
    for runner in runners:
        runner.session.close()
    report(f"## {model}: steady state ({runners[0].ops} ops in the plain graph), "
           f"{args.rounds} rounds x {args.steps} steps after {args.warmup} warm-up steps", values, runners)


def first_steps(model: str, modes: list[str], args: argparse.Namespace, output: str) -> None:
    ours = [m for m in modes if m in OUR_OPTIONS or m == PLAIN]
    first: dict[str, list[float]] = {}
    totals: dict[str, list[float]] = {}
    runners: list[Runner] = []
    for repeat in range(args.fresh):
        runners = make_runners(model, ours, args.plains, os.path.join(output, f"fresh_{repeat}"))
        order = list(runners)
        rng = random.Random(repeat)
        sums = {r.label: 0.0 for r in runners}
        for index in range(args.first_steps + 1):
            rng.shuffle(order)
            for runner in order:
                took = runner.step()
                if index == 0:
                    first.setdefault(runner.label, []).append(took)
                else:
                    sums[runner.label] += took / args.first_steps
        for runner in runners:
            totals.setdefault(runner.label, []).append(sums[runner.label])
            runner.session.close()
    report(f"## {model}: steps 2..{args.first_steps + 1} of a fresh session (mean step; one value per fresh set, "
           f"{args.fresh} sets)", totals, runners)
    print("first run of a fresh session (discovery, probe wiring, executor set-up), ms: "
          + ", ".join(f"{label} {statistics.median(v) * 1e3:.1f}" for label, v in first.items()))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="mlp,cnn,tiny")
    parser.add_argument("--modes", default="none,training_trace")
    parser.add_argument("--plains", type=int, default=3, help="identical plain sessions (the noise floor needs >= 3)")
    parser.add_argument("--rounds", type=int, default=20)
    parser.add_argument("--steps", type=int, default=50)
    # TensorFlow's executor treats every kernel as expensive (dispatched to the thread
    # pool) until its measured cost has decayed, about 100 runs; steady state starts after.
    parser.add_argument("--warmup", type=int, default=200)
    parser.add_argument("--fresh", type=int, default=3, help="fresh session sets for the first-steps measurement (0: skip)")
    parser.add_argument("--first-steps", type=int, default=100)
    parser.add_argument("--determinism", action="store_true", help="op determinism on for every session")
    args = parser.parse_args()
    modes = args.modes.split(",")
    unknown = sorted(set(modes) - set(MODES))
    if unknown or PLAIN not in modes:
        parser.error(f"--modes: unknown {unknown}; choose from {MODES}, 'none' included")
    if args.determinism:
        tf2.config.experimental.enable_op_determinism()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"TensorFlow {tf.__version__}, {os.cpu_count()} CPUs, python {sys.version.split()[0]}, "
          f"load average {load:.2f}, op determinism {'on' if args.determinism else 'off'}")
    for model in args.models.split(","):
        with tempfile.TemporaryDirectory(prefix="npu_tf_profiling_bench_") as output:  # task_trace writes ~1 MB/step
            steady_state(model, modes, args, output)
            if args.fresh:
                first_steps(model, modes, args, output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
