"""The reports the training process itself builds (at session close, at a window's end, at exit): bounded.

Why: building every report costs time and memory in proportion to the run
(a million iterations: seconds to minutes, and the run's columns plus their
text). Inside the job that lands on its very last moments, where a stall or a
doubled memory can cost days of training. So the job builds the reports only
for runs of up to ``JOB_REPORT_MAX_ITERATIONS`` iterations (well under a
second of work); a longer run gets one line naming the command that builds
them offline, ``npu-tf-prof report``, which has the whole machine to itself.

Counting is cheap on purpose: the binary frames' headers and row counts (numpy
views of the file, no row objects) and the JSON lines' newlines. This module
imports neither pandas nor the report writers unless it calls them.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from npu_tf_profiling.raw_format import layout
from npu_tf_profiling.raw_format.training_frame import Frame, decode_frames
from npu_tf_profiling.reports.report_paths import ReportPaths

# About 0.1 ms of report work an iteration: 10,000 iterations stay within about a second.
JOB_REPORT_MAX_ITERATIONS = 10_000


def count_iteration_records(prof_dir: Path) -> int:
    """How many training_trace records the PROF folder's devices hold (both formats; damaged bytes not counted)."""
    total = 0
    for device_dir in sorted(Path(prof_dir).glob(f"{layout.DEVICE_DIR_PREFIX}*")):
        for path in layout.training_trace_files(device_dir):
            data = path.read_bytes()
            if path.suffix == ".bin":
                total += sum(len(item.rows) for item in decode_frames(data) if isinstance(item, Frame))
            else:
                total += sum(1 for line in data.split(b"\n") if line.strip())
    return total


def long_run_note(prof_dir: Path, iterations: int) -> str:
    return (f"{iterations} iterations recorded in {prof_dir}: the job builds reports only for runs of up to "
            f"{JOB_REPORT_MAX_ITERATIONS} iterations, so that it does not stall or grow at its end; "
            f"build them with: npu-tf-prof report {prof_dir}")


def build_job_reports(prof_dir: Path) -> Any:
    """Every report (``writer.write_all_reports``) for a short run; for a long one, no files and one note."""
    iterations = count_iteration_records(prof_dir)
    if iterations > JOB_REPORT_MAX_ITERATIONS:
        return ReportPaths([], [long_run_note(prof_dir, iterations)])
    from npu_tf_profiling.reports.writer import write_all_reports  # pandas and the writers: only when reporting

    return write_all_reports(prof_dir)
