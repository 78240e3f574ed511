"""Speed of fp/bp point discovery on training-shaped GraphDefs of 1k, 10k, 100k ops.

The graphs come from ``npu_tf_profiling.testing.graph_synthetic``: a tf.data
input, a chain of MatMul/BiasAdd/Relu layers on resource variables, a
``gradients/`` scope with gating Identities, one ResourceApplyGradientDescent
per variable, initializers and a global-step increment as the train op.

Measured per size (GraphDef already in memory, as the runtime has it):
  index      GraphIndex.from_graph (reading every NodeDef once)
  ancestors  GraphIndex.ancestors([train op]) (the runtime's on-path check)
  discovery  find_trace_points(graph_def): index + train-op detection + fp/bp/...

Each round times every size once, in a shuffled order (interleaved, so drift
and noise hit all sizes alike); reported values are medians over rounds. The
growth ratio is time(size) / time(previous size): about 10 for linear growth.

Usage:
    .venv/bin/python benchmarks/points_speed.py [--rounds 7] [--sizes 1000,10000,100000]
"""
from __future__ import annotations

import argparse
import os
import platform
import random
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from npu_tf_profiling.graph_points import GraphIndex, find_trace_points
from npu_tf_profiling.testing.graph_synthetic import synthetic_training_graph_def


def measure(graph_def, train_op: str) -> dict[str, float]:
    started = time.perf_counter()
    index = GraphIndex.from_graph(graph_def)
    index_s = time.perf_counter() - started
    started = time.perf_counter()
    index.ancestors([train_op])
    ancestors_s = time.perf_counter() - started
    started = time.perf_counter()
    find_trace_points(graph_def)
    discovery_s = time.perf_counter() - started
    return {"index": index_s, "ancestors": ancestors_s, "discovery": discovery_s}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--sizes", default="1000,10000,100000")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    graphs = {}
    for size in sizes:
        synthetic = synthetic_training_graph_def(size)
        points = find_trace_points(synthetic.graph_def)  # also a warm-up
        assert (points.fp, points.bp, points.iteration_end) == (synthetic.fp, synthetic.bp, synthetic.train_op), points
        graphs[size] = synthetic
    rng = random.Random(args.seed)
    samples: dict[int, list[dict[str, float]]] = {size: [] for size in sizes}
    for _ in range(args.rounds):
        order = list(sizes)
        rng.shuffle(order)
        for size in order:
            samples[size].append(measure(graphs[size].graph_def, graphs[size].train_op))

    print(f"python {platform.python_version()}, {platform.machine()}, {os.cpu_count()} CPUs; "
          f"median of {args.rounds} interleaved rounds")
    print(f"{'target':>8} {'ops':>8} {'index ms':>9} {'ancestors ms':>13} {'discovery ms':>13} "
          f"{'us/op':>6} {'growth':>7}")
    previous = None
    for size in sizes:
        ops = len(graphs[size].graph_def.node)
        med = {key: statistics.median(s[key] for s in samples[size]) for key in ("index", "ancestors", "discovery")}
        growth = f"{med['discovery'] / previous:.1f}x" if previous else "-"
        print(f"{size:>8} {ops:>8} {med['index'] * 1e3:>9.1f} {med['ancestors'] * 1e3:>13.1f} "
              f"{med['discovery'] * 1e3:>13.1f} {med['discovery'] / ops * 1e6:>6.2f} {growth:>7}")
        previous = med["discovery"]
    return 0


if __name__ == "__main__":
    sys.exit(main())
