"""Step-time overhead of profiling, measured side by side in one process, interleaved.

Modes (each on its own copy of the graph, in its own session):
  none            plain session
  training_trace  this package's in-graph probes (the sess.run / NpuOptimizer path)
  task_unscheduled  task_trace on, with its window not reached (the cost on unscheduled iterations)
  task_scheduled  task_trace on every iteration (FULL_TRACE + storing the raw step stats)
  full_trace      RunOptions(trace_level=FULL_TRACE) + RunMetadata on every step
  tf_profiler     tf.profiler.experimental active (start() before, stop() after the timed steps)

Models:
  mlp  plain-Session MLP, 20 dense + batch-norm blocks, Adam, batch 64 (about 4.6k ops)
  cnn  a small CNN whose step takes well over 5 ms on 2 cores

Each round runs every mode for --steps steps in a shuffled order; a mode's round
value is its median step time, and the reported value is the median over rounds.
Usage:
    .venv/bin/python benchmarks/overhead.py [--rounds 7] [--steps 30] [--models mlp,cnn] [--modes ...]
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


BUILDERS = {"mlp": build_mlp, "cnn": build_cnn}


class ModeRunner:
    """One mode of one model: its own graph and session, and how one step is run."""

    def __init__(self, model: str, mode: str, output: str) -> None:
        self.mode = mode
        self.graph = tf.Graph()
        self.train_op = BUILDERS[model](self.graph)
        with self.graph.as_default():
            init = tf.global_variables_initializer()
        config = tf.ConfigProto()
        if mode in OUR_OPTIONS:
            write_request(config, True, json.dumps({"output": os.path.join(output, mode), **OUR_OPTIONS[mode]}))
        self.session = tf.Session(graph=self.graph, config=config)
        self.session.run(init)
        self.ops = len(self.graph.get_operations())
        self._logdir = os.path.join(output, f"tf_profiler_{mode}")

    def steps(self, count: int) -> list[float]:
        run_kwargs = {}
        if self.mode == "full_trace":
            run_kwargs = {"options": tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)}
        if self.mode == "tf_profiler":
            tf2.profiler.experimental.start(self._logdir)
        times = []
        try:
            for _ in range(count):
                if self.mode == "full_trace":
                    run_kwargs["run_metadata"] = tf.RunMetadata()
                start = time.perf_counter()
                self.session.run(self.train_op, **run_kwargs)
                times.append(time.perf_counter() - start)
        finally:
            if self.mode == "tf_profiler":
                tf2.profiler.experimental.stop()
        return times


def measure(model: str, modes: list[str], rounds: int, steps: int, warmup: int) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="npu_tf_profiling_bench_") as output:  # task_trace writes ~1 MB/step
        return _measure(model, modes, rounds, steps, warmup, output)


def _measure(model: str, modes: list[str], rounds: int, steps: int, warmup: int, output: str) -> dict[str, float]:
    runners = {mode: ModeRunner(model, mode, output) for mode in modes}
    for runner in runners.values():
        runner.steps(warmup)
    per_round: dict[str, list[float]] = {mode: [] for mode in modes}
    order = list(modes)
    rng = random.Random(0)
    for _ in range(rounds):
        rng.shuffle(order)
        for mode in order:
            per_round[mode].append(statistics.median(runners[mode].steps(steps)))
    ops = runners[modes[0]].ops
    for runner in runners.values():
        runner.session.close()
    print(f"\n## {model} ({ops} ops in the plain graph), {rounds} interleaved rounds x {steps} steps")
    medians = {mode: statistics.median(values) for mode, values in per_round.items()}
    base = medians.get("none")
    print(f"{'mode':<16}{'median step (ms)':>18}{'vs none':>10}   per-round medians (ms)")
    for mode in modes:
        ratio = f"{medians[mode] / base:>9.3f}x" if base else ""
        rounds_text = " ".join(f"{v * 1e3:.2f}" for v in per_round[mode])
        print(f"{mode:<16}{medians[mode] * 1e3:>18.3f}{ratio:>10}   {rounds_text}")
    for mode, reference in (("training_trace", "none"), ("task_unscheduled", "none"), ("task_scheduled", "full_trace")):
        if mode in per_round and reference in per_round:
            paired = [t / r for t, r in zip(per_round[mode], per_round[reference])]
            print(f"{mode} vs {reference}, median of per-round ratios: {(statistics.median(paired) - 1) * 100:+.2f}%")
    return medians


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--steps", type=int, default=30)
    # TensorFlow's executor treats every kernel as expensive (dispatched to the thread
    # pool) until its measured cost has decayed, about 100 runs; steady state starts after.
    parser.add_argument("--warmup", type=int, default=150)
    parser.add_argument("--models", default="mlp,cnn")
    parser.add_argument("--modes", default=",".join(MODES))
    args = parser.parse_args()
    print(f"TensorFlow {tf.__version__}, {os.cpu_count()} CPUs, python {sys.version.split()[0]}")
    for model in args.models.split(","):
        measure(model, args.modes.split(","), args.rounds, args.steps, args.warmup)
    return 0


if __name__ == "__main__":
    sys.exit(main())
