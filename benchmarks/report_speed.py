"""Speed and memory of the task reports on 1,000 iterations x 5,000 ops (5M tasks), and the
per-step timeline conversion against TensorFlow's ``tensorflow.python.client.timeline``.

Raw data comes from ``npu_tf_profiling.testing.task_synthetic``: a PROF folder
with ``task_trace.bin`` (one FULL_TRACE-shaped StepStats per iteration: every
node has an ``output`` with an allocation description and ``memory_stats``,
plus ``_SOURCE``/``_SINK``/``_retval`` and a profiler probe node),
``training_trace.jsonl``, ``info.json`` and ``graph_ops_1.json``.

Measured:
  report      ``write_all_reports(prof_dir)`` in a fresh subprocess (no TensorFlow
              imported there): step_trace CSV/JSON, task_time, op_summary,
              op_statistic and the msprof timeline (split at 200 MiB). Wall time
              and the child's peak RSS (``os.wait4`` rusage ``ru_maxrss``).
              Median over ``--rounds`` runs.
  per step    for ``--tf-steps`` iterations of the same file: TensorFlow's
              ``Timeline(step_stats).generate_chrome_trace_format()`` (including
              parsing the payload with TensorFlow's StepStats class) versus ours
              on a one-iteration PROF folder: decode + task table + msprof
              timeline written to disk (``load_device_tasks`` + ``add_tasks``).
              Also, from the full run's phase timings, the timeline conversion
              (decode + task table + msprof JSON) divided by the iteration count,
              which is what the >= 5x target is judged on, and the whole report's
              time (every CSV too) divided by the iteration count.

Targets (issue 5): 5M tasks in < 60 s, peak memory < 4 GB, >= 5x faster per
step than timeline.py.

Usage:
    .venv/bin/python benchmarks/report_speed.py [--iterations 1000] [--ops 5000] [--rounds 3] [--tf-steps 5] [--one-thread-id]
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from npu_tf_profiling.raw_format import layout  # noqa: E402
from npu_tf_profiling.reports.task import timeline as mt  # noqa: E402
from npu_tf_profiling.testing.task_synthetic import layered_ops, write_synthetic_prof_dir  # noqa: E402
from npu_tf_profiling.raw_format.task_record import FramedRecord, frame_task_record, iter_framed_records  # noqa: E402
from npu_tf_profiling.reports.task.table import load_device_tasks  # noqa: E402
from npu_tf_profiling.reports.step import records as raw_mod  # noqa: E402

CHILD = """
import json, sys, time
start = time.perf_counter()
from npu_tf_profiling.reports.writer import write_all_reports
paths = write_all_reports(sys.argv[1])
elapsed = time.perf_counter() - start
loaded_tf = any(m == "tensorflow" or m.startswith("tensorflow.") for m in sys.modules)
print(json.dumps({"elapsed": elapsed, "files": [str(p) for p in paths], "notes": paths.notes, "timings": paths.timings, "tensorflow": loaded_tf}))
"""


def run_report(prof_dir: Path) -> dict:
    shutil.rmtree(layout.report_dir(prof_dir), ignore_errors=True)
    env = dict(os.environ, PYTHONPATH=str(REPO))
    started = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", CHILD, str(prof_dir)], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - started
    out, err = proc.stdout.read(), proc.stderr.read()
    proc.stdout.close()
    proc.stderr.close()
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"report failed:\n{err}")
    result = json.loads(out.strip().splitlines()[-1])
    result["wall"] = wall
    result["peak_rss_mb"] = usage.ru_maxrss / 1024  # KiB on Linux
    result["sizes"] = {Path(f).name: Path(f).stat().st_size for f in result["files"]}
    return result


def per_step(prof_dir: Path, steps: int) -> dict:
    from tensorflow.core.framework import step_stats_pb2
    from tensorflow.python.client import timeline

    payloads: list[FramedRecord] = []
    for item in iter_framed_records(layout.task_trace_path(prof_dir, 0)):
        if isinstance(item, FramedRecord):
            payloads.append(item)
        if len(payloads) == steps:
            break
    tf_times, our_times, events = [], [], 0
    info = raw_mod.read_info(layout.device_dir(prof_dir, 0))
    graph_ops = layout.graph_ops_path(prof_dir, 0, 1).read_text()
    with tempfile.TemporaryDirectory() as tmp:
        one = Path(tmp) / "PROF_1_20240102030405_onestep"
        ddir = layout.device_dir(one, 0)
        (ddir / layout.DATA_DIR).mkdir(parents=True)
        (ddir / layout.INFO_FILE).write_text(json.dumps(info))
        layout.graph_ops_path(one, 0, 1).write_text(graph_ops)
        out_dir = Path(tmp) / "out"
        for record in payloads:
            started = time.perf_counter()
            stats = step_stats_pb2.StepStats.FromString(record.payload)
            text = timeline.Timeline(stats).generate_chrome_trace_format()
            tf_times.append(time.perf_counter() - started)
            events = len(json.loads(text)["traceEvents"])

            layout.task_trace_path(one, 0).write_bytes(frame_task_record(record.header, record.payload))
            started = time.perf_counter()
            table = load_device_tasks(ddir, 0, info, None)
            writer = mt.SplitTimelineWriter(out_dir, "20240102030405")
            writer.add_process(0, mt.process_events(0))
            mt.add_tasks(writer, table, 1)
            writer.finish()
            our_times.append(time.perf_counter() - started)
    return {"tf": statistics.median(tf_times), "ours": statistics.median(our_times), "tf_events": events, "steps": len(payloads)}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=1000)
    parser.add_argument("--ops", type=int, default=5000)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--tf-steps", type=int, default=5)
    parser.add_argument(
        "--one-thread-id", action="store_true",
        help="record every op with thread id 0, as TF 2.x does on CPU: the --threads concurrent chains then "
             "overlap on one track and the timeline needs lanes",
    )
    parser.add_argument("--workdir", help="where to write the synthetic PROF folder (default: a temp folder, removed)")
    parser.add_argument("--json", action="store_true", help="print the results as JSON too")
    args = parser.parse_args()

    root = Path(args.workdir) if args.workdir else Path(tempfile.mkdtemp(prefix="report_speed_"))
    try:
        started = time.perf_counter()
        ops = layered_ops(args.ops, threads=args.threads)
        if args.one_thread_id:
            ops = [dataclasses.replace(op, thread=0) for op in ops]
        run = write_synthetic_prof_dir(root, args.iterations, ops)
        synth = time.perf_counter() - started
        raw_mb = layout.task_trace_path(run.prof_dir, 0).stat().st_size / 2**20
        tasks = args.iterations * args.ops
        print(f"python {platform.python_version()}, {os.cpu_count()} CPUs; synthesised {args.iterations} iterations x "
              f"{args.ops} ops = {tasks:,} tasks on {1 if args.one_thread_id else args.threads} thread id(s) "
              f"in {synth:.1f} s (task_trace.bin {raw_mb:.0f} MiB)")

        rounds = []
        for i in range(args.rounds):
            result = run_report(run.prof_dir)
            assert not result["tensorflow"], "the report imported TensorFlow"
            rounds.append(result)
            print(f"  round {i + 1}: report {result['elapsed']:.1f} s (process {result['wall']:.1f} s), peak RSS {result['peak_rss_mb']:.0f} MiB")
        last = rounds[-1]
        for note in last["notes"]:
            print(f"  note: {note}")
        sizes = last["sizes"]
        timeline_mb = sum(v for k, v in sizes.items() if k.startswith("msprof_")) / 2**20
        task_csv_mb = sum(v for k, v in sizes.items() if k.startswith("task_time_")) / 2**20
        report_s = statistics.median(r["elapsed"] for r in rounds)
        wall_s = statistics.median(r["wall"] for r in rounds)
        peak_mb = max(r["peak_rss_mb"] for r in rounds)

        step = per_step(run.prof_dir, args.tf_steps)
        amortized = report_s / args.iterations
        phases = {k: statistics.median(r["timings"].get(k, 0.0) for r in rounds) for k in ("read", "task_time", "summaries", "timeline")}
        conversion = (phases["read"] + phases["timeline"]) / args.iterations
        results = {
            "iterations": args.iterations, "ops": args.ops, "tasks": tasks, "rounds": args.rounds,
            "report_s": report_s, "process_s": wall_s, "peak_rss_mb": peak_mb,
            "timeline_mb": timeline_mb, "timeline_files": sum(1 for k in sizes if k.startswith("msprof_")), "task_time_csv_mb": task_csv_mb,
            "tf_timeline_ms_per_step": step["tf"] * 1e3, "ours_ms_per_step": step["ours"] * 1e3,
            "ours_amortized_ms_per_step": amortized * 1e3, "ours_timeline_conversion_ms_per_step": conversion * 1e3,
            "phases_s": phases, "tf_events_per_step": step["tf_events"],
        }
        print()
        print(f"| tasks | report s (median of {args.rounds}) | process s | peak RSS MiB | msprof JSON MiB (files) | task_time CSV MiB |")
        print("|---:|---:|---:|---:|---:|---:|")
        print(f"| {tasks:,} | {report_s:.1f} | {wall_s:.1f} | {peak_mb:.0f} | {timeline_mb:.0f} ({results['timeline_files']}) | {task_csv_mb:.0f} |")
        print()
        print("phases (s, median): " + ", ".join(f"{k} {v:.1f}" for k, v in phases.items())
              + "  (read = decode task_trace.bin + task table; the rest is step_trace files and start-up)")
        print()
        print(f"| per step ({args.ops} ops; TF median of {step['steps']} steps) | ms | speed-up vs timeline.py |")
        print("|---|---:|---:|")
        print(f"| TensorFlow Timeline(...).generate_chrome_trace_format() | {step['tf'] * 1e3:.1f} | 1.0x |")
        print(f"| ours, one step alone (decode + table + msprof JSON file) | {step['ours'] * 1e3:.1f} | {step['tf'] / step['ours']:.1f}x |")
        print(f"| ours, timeline conversion in the full run (read + msprof JSON) / iterations | {conversion * 1e3:.1f} | {step['tf'] / conversion:.1f}x |")
        print(f"| ours, full report / iterations (everything: all CSVs + JSON) | {amortized * 1e3:.1f} | {step['tf'] / amortized:.1f}x |")
        print()
        ok_time, ok_mem = report_s < 60, peak_mb < 4096
        ok_speed = step["tf"] / conversion >= 5
        print(f"targets: < 60 s {'met' if ok_time else 'MISSED'}; < 4 GB {'met' if ok_mem else 'MISSED'}; "
              f">= 5x per step {'met' if ok_speed else 'MISSED'}")
        if args.json:
            print(json.dumps(results, indent=2))
        return 0 if ok_time and ok_mem and ok_speed else 1
    finally:
        if not args.workdir:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
