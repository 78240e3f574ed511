"""How soon after GetNext completes can any op of the step run: the floor under GetNext End's accuracy.

IteratorGetNext is an asynchronous kernel: it completes on tf.data's own thread, and
TensorFlow's executor hands every op that completion makes ready to the session's
thread pool, so nothing of the step runs before a pool thread picks it up (a
sleeping thread's wakeup, here). FULL_TRACE step stats, what
tests/test_runtime_accuracy.py compares the stamps with, date GetNext's end at its
completion. So no op in the graph, a stamp included, can run closer to that end
than GetNext's first consumer starts in a *plain* session.

Per model, in one process, sessions interleaved in blocks of --block steps, every
step under FULL_TRACE, after --warmup steps:

  plain     (start of the first op that consumes GetNext's outputs) - GetNext's end
  profiled  |our GetNext End stamp - GetNext's end|: the accuracy test's figure

The consumers are read from the partition graph TensorFlow actually runs (after
Grappler's rewrites). Reported: median, p95 and p99 in µs over all sessions' steps.

Usage:
    .venv/bin/python benchmarks/getnext_floor.py [--models tiny,mlp,cnn] [--sessions 3] [--steps 200]
"""
from __future__ import annotations

import argparse
import atexit
import json
import os
import random
import shutil
import sys
import tempfile
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
# Removed at exit after the package's own exit handler (registered at its import, below) has written there.
OUTPUT_ROOT = Path(tempfile.mkdtemp(prefix="npu_tf_profiling_floor_"))
atexit.register(shutil.rmtree, OUTPUT_ROOT, ignore_errors=True)

import numpy as np  # noqa: E402
import tensorflow.compat.v1 as tf  # noqa: E402

import npu_tf_profiling  # noqa: E402,F401  (installs the Session integration)
from bench_models import BUILDERS  # noqa: E402
from npu_tf_profiling.config.session_proto import write_request  # noqa: E402
from npu_tf_profiling.raw_format.training_frame import Frame, decode_frames  # noqa: E402

GET_NEXT = "IteratorGetNext"


class TracedSession:
    """One session of one model, plain or profiled, whose steps all run under FULL_TRACE."""

    def __init__(self, model: str, profiled: bool, output: Path) -> None:
        self.profiled = profiled
        self.output = output
        graph = tf.Graph()
        self.train_op = BUILDERS[model](graph)
        with graph.as_default():
            init = tf.global_variables_initializer()
        config = tf.ConfigProto()
        if profiled:
            write_request(config, True, json.dumps({"output": str(output), "training_trace": "on"}))
        self.session = tf.Session(graph=graph, config=config)
        self.session.run(init)
        self.consumers = self._get_next_consumers()
        self.get_next_ends: list[float] = []  # µs since the epoch, per traced step
        self.first_consumer_gaps: list[float] = []  # µs, per traced step

    def _get_next_consumers(self) -> set[str]:
        """The ops of the partition graph TensorFlow runs that take GetNext's outputs as inputs."""
        metadata = tf.RunMetadata()
        self.session.run(self.train_op, options=tf.RunOptions(output_partition_graphs=True), run_metadata=metadata)
        consumers = set()
        for graph_def in metadata.partition_graphs:
            for node in graph_def.node:
                if any(inp.split(":")[0] == GET_NEXT for inp in node.input if not inp.startswith("^")):
                    consumers.add(node.name)
        return consumers

    def warm_up(self, steps: int) -> None:
        for _ in range(steps):
            self.session.run(self.train_op)

    def traced_steps(self, count: int) -> None:
        for _ in range(count):
            metadata = tf.RunMetadata()
            self.session.run(self.train_op, options=tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE), run_metadata=metadata)
            starts, ends = {}, {}
            for device in metadata.step_stats.dev_stats:
                for node in device.node_stats:
                    starts[node.node_name] = float(node.all_start_micros)
                    ends[node.node_name] = float(node.all_start_micros + node.all_end_rel_micros)
            self.get_next_ends.append(ends[GET_NEXT])
            consumer_starts = [starts[name] for name in self.consumers if name in starts]
            if consumer_starts:
                self.first_consumer_gaps.append(min(consumer_starts) - ends[GET_NEXT])

    def stamp_errors(self) -> list[float]:
        """|GetNext End stamp - step stats' GetNext end| of the traced steps (the session must be closed)."""
        data = next(self.output.glob("PROF_*/device_*/data/training_trace.bin")).read_bytes()
        stamps = []
        for frame in decode_frames(data):
            assert isinstance(frame, Frame), frame
            stamps.extend(float(row["times"][1]) for row in frame.rows)  # the first GetNext's (start, end) pair
        traced = stamps[-len(self.get_next_ends):]
        return [abs(stamp - end) for stamp, end in zip(traced, self.get_next_ends)]


def summary(values: list[float]) -> str:
    if not values:
        return "no values"
    p50, p95, p99 = np.percentile(values, [50, 95, 99])
    return f"median {p50:6.1f}   p95 {p95:6.1f}   p99 {p99:6.1f}   ({len(values)} steps)"


def measure(model: str, args: argparse.Namespace, root: Path) -> None:
    sessions = [TracedSession(model, profiled, root / f"{model}_{'profiled' if profiled else 'plain'}_{i}")
                for i in range(args.sessions) for profiled in (False, True)]
    for session in sessions:
        session.warm_up(args.warmup)
    rng = random.Random(0)
    for _ in range(max(1, args.steps // args.block)):
        rng.shuffle(sessions)
        for session in sessions:
            session.traced_steps(args.block)
    for session in sessions:
        session.session.close()  # the ring's last rows are read at close
    plain = [gap for s in sessions if not s.profiled for gap in s.first_consumer_gaps]
    errors = [error for s in sessions if s.profiled for error in s.stamp_errors()]
    consumers = sorted(next(s for s in sessions if not s.profiled).consumers)
    print(f"\n## {model}: {args.sessions} sessions of each, {args.steps} FULL_TRACE steps each after {args.warmup} warm-up steps")
    print(f"GetNext's consumers (plain partition graph): {', '.join(consumers)}")
    print(f"plain: first consumer's start - GetNext's end (µs)       {summary(plain)}")
    print(f"profiled: |GetNext End stamp - GetNext's end| (µs)        {summary(errors)}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="tiny,mlp,cnn")
    parser.add_argument("--sessions", type=int, default=3, help="sessions per kind (plain, profiled)")
    parser.add_argument("--steps", type=int, default=200, help="FULL_TRACE steps per session")
    parser.add_argument("--block", type=int, default=20, help="steps a session runs before the next one's turn")
    parser.add_argument("--warmup", type=int, default=200)
    args = parser.parse_args()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"TensorFlow {tf.__version__}, {os.cpu_count()} CPUs, python {sys.version.split()[0]}, load average {load:.2f}")
    for model in args.models.split(","):
        measure(model, args, OUTPUT_ROOT)
    return 0


if __name__ == "__main__":
    sys.exit(main())
