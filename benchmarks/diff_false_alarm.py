"""False alarms of `npu-tf-prof diff`: pairs of real, identical runs of one small model must not fail it.

Each pair is two runs of ``tests/scripts/diff_train.py`` (a small TF1 model on a
tf.data generator, profiled through PROFILING_MODE alone; ``--model`` below), one after the other,
nothing changed between them. For each pair the diff's Iteration Time change, its
95% interval and its verdict at the default threshold are printed, then:
  false alarms   pairs whose exit code is 4 (the default threshold): must be 0
  CI leaves 0    pairs whose interval leaves out 0: what a threshold of 0 would call a change
                 (the interval sees one run's iterations, not the run-to-run spread)
  |change|       the largest and median |Iteration Time change| over the pairs: the
                 run-to-run spread the default threshold must stand above
and the same for every phase (the largest |change| per phase).

Usage:
    .venv/bin/python benchmarks/diff_false_alarm.py [--model mlp|tiny] [--pairs 10] [--steps 300] [--keep DIR]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from npu_tf_profiling.reports.diff.compare import DEFAULT_THRESHOLD_PCT, compare_sides  # noqa: E402
from npu_tf_profiling.reports.diff.sides import read_side  # noqa: E402

SCRIPT = ROOT / "tests" / "scripts" / "diff_train.py"
# mlp: 4 dense layers of 512 (a step of a few ms); tiny: one layer of 64 (a sub-ms step, mostly the Python generator)
MODELS = {"mlp": ["--layers", "4", "--width", "512"], "tiny": []}


def train(output: Path, steps: int, model: list[str]) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PROFILING_")}
    env.update(PROFILING_MODE="true", PROFILING_OPTIONS=json.dumps({"output": str(output), "training_trace": "on"}),
               TF_CPP_MIN_LOG_LEVEL="2")
    subprocess.run([sys.executable, str(SCRIPT), "--steps", str(steps), *model], env=env, check=True, capture_output=True, timeout=600)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=10)
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--model", choices=sorted(MODELS), default="mlp")
    parser.add_argument("--keep", metavar="DIR", help="keep the runs here (default: a temporary folder); runs already there are reused")
    args = parser.parse_args()
    root = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="diff_false_alarm_"))
    print(f"{args.pairs} pairs of {args.steps}-step runs of {SCRIPT.name} {' '.join(MODELS[args.model])}; threshold {DEFAULT_THRESHOLD_PCT:g}%; "
          f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores; runs in {root}")
    rows = []
    phase_max: dict[str, float] = {}
    started = time.time()
    for i in range(args.pairs):
        sides = [root / f"pair{i:02d}_{name}" for name in ("baseline", "candidate")]
        for side in sides:
            if not side.exists():  # a kept run is diffed again, not rerun (the diff's rules changed, the runs did not)
                train(side, args.steps, MODELS[args.model])
        report = compare_sides(read_side(sides[0]), read_side(sides[1]))
        model = report.models[0]
        it = model.phase("Iteration Time")
        for change in model.phases:
            if change.change_pct is not None:
                phase_max[change.phase] = max(phase_max.get(change.phase, 0.0), abs(change.change_pct))
        rows.append((it.change_pct, it.significant, report.exit_code))
        print(f"pair {i + 1:2d}: median {it.baseline_median_us:,.0f} -> {it.candidate_median_us:,.0f} µs, "
              f"change {it.headline()}  exit {report.exit_code}  | {report.verdict}", flush=True)
    changes = [abs(r[0]) for r in rows]
    print(f"false alarms (exit 4): {sum(r[2] == 4 for r in rows)}/{len(rows)}; CI leaves 0: {sum(r[1] for r in rows)}/{len(rows)}; "
          f"|Iteration Time change|: max {max(changes):.1f}%, median {statistics.median(changes):.1f}%")
    print("largest |change| per phase: " + ", ".join(f"{k} {v:.1f}%" for k, v in phase_max.items()))
    print(f"wall {time.time() - started:.0f} s; load average now {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
