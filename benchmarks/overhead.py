"""Step-time overhead of profiling: groups of identical sessions in one process, interleaved, against a plain-vs-plain noise floor.

Every session has its own copy of the graph. Identical sessions of one graph differ
by a few % for their whole life (TensorFlow's per-executor cost model and thread
placement), so one session per mode would measure that offset, not the mode: each
profiled mode runs --copies sessions and `none` runs twice as many, and a round
compares the *median of a mode's sessions* with the median of the plain ones. The
noise floor is the same comparison between the two halves of the plain sessions:
an overhead inside it is not a measured overhead.

Modes:
  none              plain session (2 x --copies copies)
  training_trace    this package's step trace (the sess.run / NpuOptimizer path)
  task_unscheduled  task_trace on, its window not reached (what unscheduled iterations pay)
  task_scheduled    task_trace on every iteration (FULL_TRACE + storing the raw step stats)
  anomaly_armed     training_trace with anomaly_capture "on", nothing slow: the detection, the faster drains
                    and the one reference capture (issue 49: within the noise of training_trace alone)
  full_trace        RunOptions(trace_level=FULL_TRACE) + RunMetadata on every step
  tf_profiler       tf.profiler.experimental active while the steps run (one session: it is process-wide)

Models (bench_models.py: Sessions; tf2_models.py: eager TensorFlow 2 steps, modes none and training_trace only):
  mlp   20 dense + batch-norm blocks, Adam, batch 64 (about 4.6k ops; ~3 ms a step on 2 cores)
  cnn   3 conv layers, Momentum, batch 32 (~19 ms a step)
  tiny  two small dense layers, SGD, batch 16 (~0.3 ms a step: per-step costs show most here)
  tf2_fit_mlp, tf2_loop_mlp, tf2_tiny   the MLP as Keras fit's step and as a custom tf.function step, and
        the tiny model as a custom step: a "session" is then one model with its own traced step function,
        profiled when its mode is training_trace (start_tf2_profiling before its trace)

Two measurements per model:
  steady state  --warmup steps first; then --rounds rounds of *adjacent pairs*. In a round every
                session of a profiled mode is paired with a plain session drawn at random, and
                every session of the plain half A with one of half B (the noise floor). The pairs
                run in a shuffled order, each pair's two visits back to back in a random order;
                a visit is --steps steps (default per model: STEPS_PER_VISIT). A pair gives one
                sample: mine / theirs - 1 of the two visits' median steps.
  first steps   --fresh times: new graphs and sessions for every mode, then their first
                --first-steps steps interleaved step by step; the very first run (discovery,
                probe wiring, TensorFlow's executor set-up) is reported on its own.

Why pairs: this machine's speed drifts by several % within a few hundred ms (measured ad hoc: a
lone CNN session's step times are correlated up to ~5 steps apart, and its medians of 10
steps spread by 8%). Two visits run back to back share most of that drift and their ratio
cancels it, where comparing whole rounds compares visits seconds apart. The sessions'
lifelong offsets (above) are averaged over the sessions only: hence several per mode.

Reported: overhead in % and in µs per step, the median over a mode's pairs with its 95%
confidence interval (from the pairs' order statistics: it covers the drift, not the
sessions' offsets), and the plain-vs-plain noise floor measured the same way, which has
both. Then the same comparison from the sessions themselves (the "session draw"): each session's
median over its visits, the mean of a group's sessions against the plain ones', with a 95%
bootstrap interval that redraws the sessions of both sides, so it covers which sessions the run
made (on the MLP that moves a figure by about ±1% between runs). The ring's reads (one background
thread per process drains every profiled session each 0.5 s) run while *any* session steps,
so the paired figures spread their cost over plain sessions too: it is reported on its own,
per drain (wall time, and CPU time of the draining thread) and as the share of a core that
one drain per 0.5 s per session takes. `--determinism` turns on op
determinism for the whole process (every session), which measures the host-clock fallback.

Usage:
    .venv/bin/python benchmarks/overhead.py [--models mlp,cnn,tiny] [--modes none,training_trace] [--copies 3] [--rounds 300]
"""
from __future__ import annotations

import argparse
import atexit
import json
import os
import random
import shutil
import statistics
import sys
import tempfile
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import tensorflow as tf2
import tensorflow.compat.v1 as tf

# The profiled sessions' output, removed at exit *after* the package's own exit handler (registered
# when it is imported below; atexit runs last-registered first) has written its reports there.
OUTPUT_ROOT = tempfile.mkdtemp(prefix="npu_tf_profiling_bench_")
atexit.register(shutil.rmtree, OUTPUT_ROOT, ignore_errors=True)

import npu_tf_profiling  # noqa: E402  (installs the Session integration)
from bench_models import BUILDERS  # noqa: E402
from tf2_models import TF2_BUILDERS, TF2_STEPS_PER_VISIT  # noqa: E402
from npu_tf_profiling.runtime.functions.reader import FunctionModel  # noqa: E402
from npu_tf_profiling.config.session_proto import write_request  # noqa: E402
from npu_tf_profiling.runtime.ring_reader import DRAIN_INTERVAL_S  # noqa: E402
from npu_tf_profiling.runtime.session.recorder import Recorder  # noqa: E402

# Steps a steady-state visit runs, per model: a few ms or more, so that a visit is not dominated by
# the cold caches of a session switch, and well under the machine's drift time (~100 ms).
STEPS_PER_VISIT = {"tiny": 20, "mlp": 5, "cnn": 1, **TF2_STEPS_PER_VISIT}
TF2_MODES = ("none", "training_trace")
FLOOR = "plain A vs B"

MODES = ("none", "training_trace", "task_unscheduled", "task_scheduled", "full_trace", "tf_profiler", "anomaly_armed")
PLAIN = "none"

# profiling_options per mode of this package (modes not listed here are not ours).
OUR_OPTIONS = {
    "training_trace": {"training_trace": "on"},
    # task_trace on, but the window is far ahead: measures what unscheduled iterations pay.
    "task_unscheduled": {"task_trace": "on", "start_step": 10**9, "stop_step": 10**9},
    # task_trace on every iteration: FULL_TRACE plus storing the raw step stats.
    "task_scheduled": {"task_trace": "on", "schedule": {"active": 1, "repeat": 0}},
    "anomaly_armed": {"training_trace": "on", "anomaly_capture": "on"},
}


class DrainClock:
    """Times every drain of the ring (the reader thread's and the training thread's) while installed:
    wall time, and the CPU time of the thread that drains (its Python, NumPy and file write; the few
    table lookups its `run`s make execute on the session's thread pool, beside the steps)."""

    def __init__(self) -> None:
        self.wall = 0.0
        self.cpu = 0.0
        self.drains = 0
        # A session's drains, and a TF2 function's (its eager reads of the ring's tables).
        self._originals = {Recorder: Recorder._drain_locked, FunctionModel: FunctionModel._drain_locked}

    def __enter__(self) -> "DrainClock":
        for owner, original in self._originals.items():
            setattr(owner, "_drain_locked", self._timed(original))
        return self

    def _timed(self, original):
        def timed(*args: object) -> None:
            wall, cpu = time.perf_counter(), time.thread_time()
            try:
                original(*args)
            finally:
                self.wall += time.perf_counter() - wall
                self.cpu += time.thread_time() - cpu
                self.drains += 1

        return timed

    def __exit__(self, *exc: object) -> None:
        for owner, original in self._originals.items():
            setattr(owner, "_drain_locked", original)


class Runner:
    """One session of one mode: its own graph, and how one step is run."""

    def __init__(self, model: str, mode: str, output: str, label: str) -> None:
        self.mode = mode
        self.label = label
        self.visits: list[float] = []  # the median step of each steady-state visit
        self.session = None
        self._kwargs: dict = {}
        if model in TF2_BUILDERS:
            # Whether the step is profiled is decided when it is traced, by its builder's first call.
            options = {"output": os.path.join(output, label), **OUR_OPTIONS[mode]} if mode in OUR_OPTIONS else None
            npu_tf_profiling.start_tf2_profiling(options, enable_profiling=options is not None)
            self._tf2_step, self.ops = TF2_BUILDERS[model]()
            return
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
        if mode == "full_trace":
            self._kwargs = {"options": tf.RunOptions(trace_level=tf.RunOptions.FULL_TRACE)}

    def step(self) -> float:
        if self.session is None:
            start = time.perf_counter()
            self._tf2_step()
            return time.perf_counter() - start
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

    def close(self) -> None:
        if self.session is not None:
            self.session.close()


def make_runners(model: str, modes: list[str], copies: int, output: str) -> list[Runner]:
    """Every mode's sessions, made in turns (two plain, then one of each other mode; again).

    Not one mode after the other, where the mode made last would carry any drift of the
    sessions' lifelong speed with the order they are made in. On the MLP the plain halves made
    one after the other differed by -0.9% and -1.4%; made in turns, by +0.05%, -0.95% and
    -0.51%: the draw of sessions alone is about that large, the order was not the whole of it.
    """
    counts = {mode: 2 * copies if mode == PLAIN else (1 if mode == "tf_profiler" else copies) for mode in modes}
    turn = [mode for mode in modes for _ in range(2 if mode == PLAIN else 1)]
    made = dict.fromkeys(modes, 0)
    runners = []
    while len(runners) < sum(counts.values()):
        for mode in turn:
            if made[mode] < counts[mode]:
                runners.append(Runner(model, mode, output, f"{mode}_{made[mode]}"))
                made[mode] += 1
    return runners


def measured_modes(grouped: dict[str, list[str]]) -> list[str]:
    """The modes compared with the plain sessions (every group but the plain ones)."""
    return [mode for mode in grouped if mode not in (PLAIN, "plain A", "plain B")]


def comparisons(grouped: dict[str, list[str]]) -> list[tuple[str, list[str], list[str]]]:
    """What each report row compares: (name, its sessions, the reference sessions); the floor first."""
    return [(FLOOR, grouped["plain A"], grouped["plain B"])] + [
        (mode, grouped[mode], grouped[PLAIN]) for mode in measured_modes(grouped)
    ]


def groups(runners: list[Runner]) -> dict[str, list[str]]:
    """Session labels per group: each mode, and the plain sessions' two halves (the noise floor's sides),
    every other plain session in the order they were made."""
    by_mode: dict[str, list[str]] = {}
    for runner in runners:
        by_mode.setdefault(runner.mode, []).append(runner.label)
    plain = by_mode[PLAIN]
    return {**by_mode, "plain A": plain[0::2], "plain B": plain[1::2]}


def paired(values: dict[str, list[float]], group: list[str], reference: list[str]) -> tuple[list[float], list[float]]:
    """Per fresh set: (ratio - 1, difference) of the group's median session against the reference's."""
    ratios, diffs = [], []
    for i in range(len(values[group[0]])):
        mine = statistics.median(values[label][i] for label in group)
        theirs = statistics.median(values[label][i] for label in reference)
        ratios.append(mine / theirs - 1)
        diffs.append(mine - theirs)
    return ratios, diffs


def _quartiles(values: list[float]) -> tuple[float, float]:
    if len(values) < 2:
        return values[0], values[0]
    q = statistics.quantiles(values, n=4)
    return q[0], q[2]


def report(title: str, values: dict[str, list[float]], runners: list[Runner]) -> None:
    grouped = groups(runners)
    print(f"\n{title}")
    print(f"{'group':<20}{'sessions':>9}{'median ms':>11}{'overhead':>10}{'µs/step':>10}   fresh sets' quartiles (%)   per-session medians (ms)")
    for name, labels, reference in comparisons(grouped):
        ratios, diffs = paired(values, labels, reference)
        low, high = _quartiles(ratios)
        median = statistics.median(statistics.median(values[label][i] for label in labels) for i in range(len(values[labels[0]])))
        sessions = " ".join(f"{statistics.median(values[label]) * 1e3:.3f}" for label in labels)
        print(f"{name:<20}{len(labels):>9}{median * 1e3:>11.3f}{statistics.median(ratios) * 100:>+9.2f}%"
              f"{statistics.median(diffs) * 1e6:>+10.1f}   {low * 100:+6.2f} .. {high * 100:+6.2f}       {sessions}")
    plain_sessions = " ".join(f"{statistics.median(values[label]) * 1e3:.3f}" for label in grouped[PLAIN])
    print(f"plain sessions' medians (ms): {plain_sessions}")


def _paired_sample(mine: Runner, theirs: Runner, steps: int, rng: random.Random) -> tuple[float, float]:
    """One adjacent pair: the two sessions' median steps over back-to-back visits, in a random order."""
    visits = [mine, theirs]
    rng.shuffle(visits)
    for runner in visits:
        runner.visits.append(statistics.median(runner.steps(steps)))
    return mine.visits[-1], theirs.visits[-1]


def _median_interval(values: list[float]) -> tuple[float, float]:
    """The 95% confidence interval of the median of independent samples, from their order statistics."""
    ordered = sorted(values)
    half_width = 0.98 * len(ordered) ** 0.5  # 1.96 / 2 * sqrt(n): the binomial's normal approximation
    low = max(int(len(ordered) / 2 - half_width), 0)
    high = min(int(len(ordered) / 2 + half_width + 1), len(ordered) - 1)
    return ordered[low], ordered[high]


def report_pairs(title: str, samples: dict[str, list[tuple[float, float]]], runners: list[Runner]) -> None:
    grouped = groups(runners)
    by_label = {runner.label: runner for runner in runners}
    print(f"\n{title}")
    print(f"{'group':<20}{'sessions':>9}{'pairs':>7}{'median ms':>11}{'overhead':>10}{'95% CI (%)':>18}{'µs/step':>10}"
          f"{'95% CI (µs)':>20}   per-session medians over the visits (ms)")
    for name, pairs in samples.items():
        ratios = [mine / theirs - 1 for mine, theirs in pairs]
        diffs = [(mine - theirs) * 1e6 for mine, theirs in pairs]
        (r_low, r_high), (d_low, d_high) = _median_interval(ratios), _median_interval(diffs)
        labels = grouped["plain A"] if name == FLOOR else grouped[name]
        sessions = " ".join(f"{statistics.median(by_label[label].visits) * 1e3:.3f}" for label in labels)
        print(f"{name:<20}{len(labels):>9}{len(pairs):>7}{statistics.median(m for m, _ in pairs) * 1e3:>11.3f}"
              f"{statistics.median(ratios) * 100:>+9.2f}%{r_low * 100:>+9.2f} ..{r_high * 100:>+6.2f}"
              f"{statistics.median(diffs):>+10.1f}{d_low:>+10.1f} ..{d_high:>+7.1f}   {sessions}")
    plain_sessions = " ".join(f"{statistics.median(by_label[label].visits) * 1e3:.3f}" for label in grouped[PLAIN])
    print(f"plain sessions' medians (ms): {plain_sessions}")
    report_session_draw(grouped, by_label)


def session_draw_interval(mine: list[float], theirs: list[float], draws: int = 4000) -> tuple[float, float, float]:
    """Overhead of the mean session (each session: its median step) over the reference's, and a 95%
    bootstrap interval that redraws the sessions of both sides.

    Why: the pairs' interval covers the machine's drift but not which sessions a run happened to
    make, and on the MLP that draw moves a figure by about ±1% between runs. This interval treats
    the sessions as the samples, so a run's figure is beyond noise only when it clears the draw
    too. Means, not medians: with 6-12 sessions a side the median's bootstrap is too lumpy.
    """
    rng = random.Random(0)
    point = statistics.fmean(mine) / statistics.fmean(theirs) - 1
    boots = sorted(
        statistics.fmean(rng.choices(mine, k=len(mine))) / statistics.fmean(rng.choices(theirs, k=len(theirs))) - 1
        for _ in range(draws)
    )
    return point, boots[int(0.025 * draws)], boots[int(0.975 * draws) - 1]


def report_session_draw(grouped: dict[str, list[str]], by_label: dict[str, Runner]) -> None:
    print("session draw (each session's median over its visits; mean of a group's sessions; 95% interval "
          "redrawing the sessions of both sides):")
    for name, labels, reference in comparisons(grouped):
        mine = [statistics.median(by_label[label].visits) for label in labels]
        theirs = [statistics.median(by_label[label].visits) for label in reference]
        point, low, high = session_draw_interval(mine, theirs)
        step = statistics.fmean(theirs) * 1e6
        print(f"  {name:<18}{point * 100:>+8.2f}% ({low * 100:+.2f} .. {high * 100:+.2f}){point * step:>+10.1f} µs "
              f"({low * step:+.1f} .. {high * step:+.1f})")


def steady_state(model: str, modes: list[str], args: argparse.Namespace, output: str) -> None:
    runners = make_runners(model, modes, args.copies, output)
    grouped = groups(runners)
    by_label = {runner.label: runner for runner in runners}
    plain, plain_b = grouped[PLAIN], grouped["plain B"]
    steps = args.steps or STEPS_PER_VISIT[model]
    samples: dict[str, list[tuple[float, float]]] = {FLOOR: []}
    samples.update({mode: [] for mode in measured_modes(grouped)})
    rng = random.Random(0)
    with DrainClock() as drains:
        for runner in runners:
            runner.steps(args.warmup)
        for _ in range(args.rounds):
            pairs = [(FLOOR, label, rng.choice(plain_b)) for label in grouped["plain A"]]
            pairs += [(mode, label, rng.choice(plain)) for mode in samples if mode != FLOOR for label in grouped[mode]]
            rng.shuffle(pairs)
            for name, mine, theirs in pairs:
                sample = _paired_sample(by_label[mine], by_label[theirs], steps, rng)
                samples[name].append(sample)
    for runner in runners:
        runner.close()
    report_pairs(f"## {model}: steady state ({runners[0].ops} ops in the plain graph), {args.rounds} rounds of adjacent "
                 f"pairs, {steps} steps a visit, after {args.warmup} warm-up steps", samples, runners)
    if drains.drains:
        wall, cpu = drains.wall / drains.drains, drains.cpu / drains.drains
        print(f"ring reads: {drains.drains} drains, on average {wall * 1e3:.2f} ms wall (waiting for the thread pool the "
              f"steps use, mostly) and {cpu * 1e3:.2f} ms CPU of the draining thread; at one per {DRAIN_INTERVAL_S} s per "
              f"session, that CPU is {cpu / DRAIN_INTERVAL_S * 100:.2f}% of one core per profiled session")


def first_steps(model: str, modes: list[str], args: argparse.Namespace, output: str) -> None:
    ours = [m for m in modes if m in OUR_OPTIONS or m == PLAIN]
    first: dict[str, list[float]] = {}
    means: dict[str, list[float]] = {}
    runners: list[Runner] = []
    for repeat in range(args.fresh):
        runners = make_runners(model, ours, args.copies, os.path.join(output, f"fresh_{repeat}"))
        order = list(runners)
        rng = random.Random(repeat)
        sums = {r.label: 0.0 for r in runners}
        for index in range(args.first_steps + 1):
            rng.shuffle(order)
            for runner in order:
                took = runner.step()
                if index == 0:
                    first.setdefault(runner.mode, []).append(took)
                else:
                    sums[runner.label] += took / args.first_steps
        for runner in runners:
            means.setdefault(runner.label, []).append(sums[runner.label])
            runner.close()
    report(f"## {model}: steps 2..{args.first_steps + 1} of a fresh session (mean step; one value per fresh set, "
           f"{args.fresh} sets of {args.copies} sessions per mode)", means, runners)
    print("first run of a fresh session (discovery, probe wiring, executor set-up), median ms: "
          + ", ".join(f"{mode} {statistics.median(v) * 1e3:.1f}" for mode, v in first.items()))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", default="mlp,cnn,tiny")
    parser.add_argument("--modes", default="none,training_trace")
    parser.add_argument("--copies", type=int, default=3, help="sessions per profiled mode (plain: twice as many)")
    parser.add_argument("--rounds", type=int, default=300, help="steady-state rounds of adjacent pairs")
    parser.add_argument("--steps", type=int, default=0, help="steps a steady-state visit runs (0: STEPS_PER_VISIT)")
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
    models = args.models.split(",")
    unknown_models = sorted(set(models) - set(BUILDERS) - set(TF2_BUILDERS))
    if unknown_models:
        parser.error(f"--models: unknown {unknown_models}; choose from {sorted(BUILDERS) + sorted(TF2_BUILDERS)}")
    if any(m in TF2_BUILDERS for m in models) and set(modes) - set(TF2_MODES):
        parser.error(f"--modes: the TF2 models take {TF2_MODES} only")
    if args.determinism:
        tf2.config.experimental.enable_op_determinism()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"TensorFlow {tf.__version__}, {os.cpu_count()} CPUs, python {sys.version.split()[0]}, "
          f"load average {load:.2f}, op determinism {'on' if args.determinism else 'off'}")
    for model in models:
        output = os.path.join(OUTPUT_ROOT, model)  # task_trace writes ~1 MB a step: a few GB per model at most
        steady_state(model, modes, args, output)
        if args.fresh:
            first_steps(model, modes, args, output)
    return 0


if __name__ == "__main__":
    sys.exit(main())
