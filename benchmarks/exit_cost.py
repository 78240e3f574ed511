"""What a long profiled TensorFlow job pays at its end: seconds and memory from its last step to its exit.

The job is ``tests/scripts/many_steps.py``: a plain-Session loop of tiny steps
(one GetNext, a 4x1 matmul, SGD), run ``--steps`` times (default 200,000),
profiled from the environment (training_trace on), and the same job without
profiling as the baseline of what TensorFlow's own teardown costs. The script
prints the wall clock when its loop ended and its peak RSS then; the parent
takes the process's end (``os.wait4``) and its final peak RSS, so:

  exit s      loop end -> process gone (session close, the profiler's reports or
              its one-line note, interpreter teardown)
  exit cpu s  the CPU seconds the process spent after its loop (less sensitive to a loaded machine)
  exit MiB    final peak RSS - peak RSS at the loop's end (what the exit added on top)

Target (issue 39): the training process's exit after 1M iterations <= 2 s and
<= 200 MB beyond the run's own columns. A run over ``JOB_REPORT_MAX_ITERATIONS``
builds no reports in the job (one line names ``npu-tf-prof report``).

Usage:
    .venv/bin/python benchmarks/exit_cost.py [--steps 200000] [--rounds 3]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SCRIPT = REPO / "tests" / "scripts" / "many_steps.py"


def run_job(steps: int, output: Path | None) -> dict:
    """One job; its exit seconds and MiB, its loop's seconds, and what it printed on stderr about the reports."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PROFILING_")}
    if output is not None:
        env.update({"PROFILING_MODE": "true", "PROFILING_OPTIONS": json.dumps({"output": str(output), "training_trace": "on"})})
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        started = time.time()
        proc = subprocess.Popen([sys.executable, str(SCRIPT), str(steps)], env=env, stdout=out, stderr=err, text=True)
        _, status, usage = os.wait4(proc.pid, 0)
        ended = time.time()
        out.seek(0)
        err.seek(0)
        stdout, stderr = out.read(), err.read()
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(stderr[-3000:])
    result = json.loads(stdout.strip().splitlines()[-1])
    peak_loop = result["peak_rss_kib"] / 1024
    exit_cpu = usage.ru_utime + usage.ru_stime - result["cpu_s"]
    return {"exit_s": ended - result["loop_end"], "exit_cpu_s": exit_cpu, "loop_s": result["loop_end"] - started, "peak_loop_mib": peak_loop,
            "exit_mib": usage.ru_maxrss / 1024 - peak_loop, "note": [line for line in stderr.splitlines() if "npu-tf-prof report" in line]}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="exit_cost", description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=200_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    print(f"# {platform.node()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, "
          f"load average {os.getloadavg()[0]:.1f}; {args.steps} steps")
    rows = {"profiled": [], "plain": []}
    for round_no in range(args.rounds):
        for kind in ("profiled", "plain") if round_no % 2 == 0 else ("plain", "profiled"):
            with tempfile.TemporaryDirectory() as tmp:
                result = run_job(args.steps, Path(tmp) if kind == "profiled" else None)
                if kind == "profiled":
                    raw = sum(p.stat().st_size for p in Path(tmp).rglob("*.bin")) / 1e6
                    result["raw_mb"] = raw
            rows[kind].append(result)
            extra = f", raw {result['raw_mb']:.1f} MB, note: {result['note'][0][:90] if result['note'] else '(none)'}" if kind == "profiled" else ""
            print(f"  {kind:9s} loop {result['loop_s']:6.1f} s  exit {result['exit_s']:5.2f} s (cpu {result['exit_cpu_s']:5.2f} s)  +{result['exit_mib']:4.0f} MiB  "
                  f"(peak at loop end {result['peak_loop_mib']:5.0f} MiB){extra}")
    for kind, results in rows.items():
        print(f"{kind:9s} median exit {statistics.median(r['exit_s'] for r in results):.2f} s, "
              f"cpu {statistics.median(r['exit_cpu_s'] for r in results):.2f} s, "
              f"+{statistics.median(r['exit_mib'] for r in results):.0f} MiB "
              f"(runs: {', '.join(format(r['exit_s'], '.2f') + ' s' for r in results)})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
