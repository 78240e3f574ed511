"""Cost of issue 47's host switches: the host sampler (host_sys / host_sys_usage / profile_memory) and mstx markers.

The sampler is one thread per process, running while *every* session steps, so overhead.py's pairs of sessions
would charge it to both sides of a pair. Here one plain session of the TF1 MLP (bench_models.py) runs blocks of
--steps steps, and before each block the sampler is started or stopped, in adjacent pairs (on/off in a random
order), each pair giving on / off - 1 of the two blocks' median steps. Reported: the median over the pairs with
a 95% interval from their order statistics, and the same between two plain blocks (the noise floor); then the
sampler's own CPU time per second, measured with the process idle; an mstx mark's cost off and on; and each
counter's CPU time a read through /proc's kept descriptors against psutil's, side by side (runtime/host/counters.py).

Usage:
    .venv/bin/python benchmarks/host_switches_cost.py [--freqs 50,10] [--pairs 60] [--steps 20] [--no-steps | --readers-only]
"""
from __future__ import annotations

import argparse
import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import tensorflow.compat.v1 as tf

from bench_models import BUILDERS
from npu_tf_profiling import mstx
from npu_tf_profiling.raw_format.append_writer import AppendOnlyWriter, StorageBudget
from npu_tf_profiling.runtime.host.counters import ProcCounters, PsutilCounters
from npu_tf_profiling.runtime.host.sampler import HostSampler

ALL_HOST_SYS = frozenset({"cpu", "mem", "disk", "network"})
ALL_USAGE = frozenset({"cpu", "mem"})


def start_sampler(freq: int, folder: Path) -> HostSampler:
    writer = AppendOnlyWriter(folder / f"host_sys_{time.monotonic_ns()}.jsonl", StorageBudget(None))
    return HostSampler(writer, freq, ALL_HOST_SYS, ALL_USAGE, True, None)


def interval(samples: list[float]) -> tuple[float, float, float]:
    """Median and a 95% interval from order statistics (binomial, normal approximation)."""
    ordered = sorted(samples)
    n = len(ordered)
    half = 1.96 * (n ** 0.5) / 2
    lo, hi = max(0, int(n / 2 - half)), min(n - 1, int(n / 2 + half))
    return statistics.median(ordered), ordered[lo], ordered[hi]


def block(sess: tf.Session, train_op: tf.Operation, steps: int) -> float:
    times = []
    for _ in range(steps):
        start = time.perf_counter()
        sess.run(train_op)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def step_cost(freq: int, pairs: int, steps: int, folder: Path) -> None:
    graph = tf.Graph()
    train_op = BUILDERS["mlp"](graph)
    with tf.Session(graph=graph) as sess:
        with graph.as_default():
            sess.run(tf.global_variables_initializer())
        block(sess, train_op, 200)  # warm-up
        on_off, floor, step_s = [], [], []
        for _ in range(pairs):
            order = [True, False]
            random.shuffle(order)
            medians = {}
            for on in order:
                sampler = start_sampler(freq, folder) if on else None
                medians[on] = block(sess, train_op, steps)
                if sampler is not None:
                    sampler.stop()
            on_off.append(medians[True] / medians[False] - 1)
            a, b = block(sess, train_op, steps), block(sess, train_op, steps)
            floor.append(a / b - 1)
            step_s.append(medians[False])
    for name, values in (("sampler on", on_off), ("floor", floor)):
        median, lo, hi = interval(values)
        print(f"{freq:>3} Hz {name:>10}: {median * 100:+.2f}% [{lo * 100:+.2f}, {hi * 100:+.2f}] "
              f"({median * statistics.median(step_s) * 1e6:+.1f} us of a {statistics.median(step_s) * 1e3:.2f} ms step)")


def sampler_cpu(freq: int, seconds: float, folder: Path) -> None:
    started_cpu, started = time.process_time(), time.monotonic()
    sampler = start_sampler(freq, folder)
    time.sleep(seconds)
    sampler.stop()
    share = (time.process_time() - started_cpu) / (time.monotonic() - started)
    print(f"{freq:>3} Hz sampler alone: {share * 100:.2f}% of a core ({share / freq * 1e6:.0f} us a sample, all switches)")


def marker_cost(calls: int) -> None:
    for on in (False, True):
        (mstx.enable_recording if on else mstx.disable_recording)()
        started = time.process_time()
        for _ in range(calls):
            mstx.range_end(mstx.range_start("r"))
        per_pair = (time.process_time() - started) / calls
        started = time.process_time()
        for _ in range(calls):
            mstx.mark("m")
        per_mark = (time.process_time() - started) / calls
        mstx.drain_records()
        print(f"mstx {'on ' if on else 'off'}: mark {per_mark * 1e6:.2f} us, range_start + range_end {per_pair * 1e6:.2f} us")
    mstx.disable_recording()


def reader_cost(calls: int) -> None:
    """Each counter's thread CPU time a read, /proc against psutil, in alternating rounds (the same load for both)."""
    readers = {"proc": ProcCounters(), "psutil": PsutilCounters()}
    names = ("process_cpu_s", "process_rss_kb", "process_io_bytes", "net_bytes", "system_cpu_s", "system_memory_kb")
    spent = {(reader, name): 0.0 for reader in readers for name in names}
    for _ in range(5):
        for reader, counters in readers.items():
            for name in names:
                read = getattr(counters, name)
                started = time.thread_time()
                for _ in range(calls // 5):
                    read()
                spent[reader, name] += time.thread_time() - started
    for name in names:
        proc, ps = (spent[reader, name] / calls * 1e6 for reader in readers)
        print(f"{name:>17}: /proc {proc:6.1f} us, psutil {ps:6.1f} us a read ({ps / proc:.1f}x)")
    proc, ps = (sum(spent[reader, name] for name in names) / calls * 1e6 for reader in readers)
    print(f"{'every counter':>17}: /proc {proc:6.1f} us, psutil {ps:6.1f} us a sample ({ps / proc:.1f}x)")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--freqs", default="50,10")
    parser.add_argument("--pairs", type=int, default=60)
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--idle-seconds", type=float, default=5.0)
    parser.add_argument("--readers-only", action="store_true", help="only the counters' read costs (no TensorFlow run)")
    parser.add_argument("--no-steps", action="store_true", help="the sampler's own CPU only, no MLP step pairs")
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    marker_cost(200_000)
    reader_cost(5_000)
    if args.readers_only:
        return
    with tempfile.TemporaryDirectory() as folder:
        for freq in (int(f) for f in args.freqs.split(",")):
            sampler_cpu(freq, args.idle_seconds, Path(folder))
            if not args.no_steps:
                step_cost(freq, args.pairs, args.steps, Path(folder))


if __name__ == "__main__":
    main()
