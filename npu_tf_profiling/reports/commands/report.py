"""``npu-tf-prof report PATH``: (re)build every report from raw data.

That is the step_trace CSV/JSON and, when the folder has task_trace data,
task_time/op_summary/op_statistic CSVs and the msprof timeline (split into
numbered files above ``--timeline-max-mb``); a step_trace timeline larger
than ``--slice-mb`` is sliced as CANN slices its own (``trace_slices``). PATH is a PROF_* folder or an
output folder holding several (each is reported). Prints the written files,
one path per line, on stdout; notes (tasks and skipped nodes per device, a
split timeline, each rank's msprof-analyze / MindStudio Insight folder),
warnings and errors go to stderr. Exit codes: 0 written, 2 bad input (missing path,
not a PROF folder, unreadable data, bad --timestamp), 3 no iterations found.
Works offline and never imports TensorFlow.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from npu_tf_profiling.exit_codes import EXIT_BAD_INPUT
from npu_tf_profiling.reports.commands.common import for_each_prof_dir
from npu_tf_profiling.reports.errors import BadInputError
from npu_tf_profiling.reports.prof_dir import check_timestamp
from npu_tf_profiling.reports.encoders.trace_slices import MIB, MIN_SLICE_BYTES
from npu_tf_profiling.reports.writer import write_all_reports

PROG = "npu-tf-prof report"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", metavar="PROF_DIR", help="a PROF_* folder, or a folder holding PROF_* folders")
    parser.add_argument(
        "--timestamp",
        metavar="YYYYmmddHHMMSS",
        help="the <ts> in step_trace_<ts>.csv/.json (default: the time in the PROF_* folder name)",
    )
    parser.add_argument(
        "--timeline-max-mb",
        metavar="MiB",
        type=float,
        default=200.0,
        help="largest msprof_<ts>.json; bigger timelines are split into CANN's slices msprof_slice_0_<ts>.json, _1... (default: 200)",
    )
    parser.add_argument(
        "--slice-mb",
        metavar="MiB",
        type=float,
        default=None,
        help="largest step_trace_<ts>.json; a longer run's timeline is sliced as CANN does, into "
        "step_trace_slice_<n>_<ts>.json split between iterations (default: the run's timeline_slice_mb option, else 200)",
    )


def run(args: argparse.Namespace) -> int:
    if args.timestamp is not None:
        try:
            check_timestamp(args.timestamp)
        except BadInputError as exc:
            sys.stderr.write(f"{PROG}: error: {exc}\n")
            return EXIT_BAD_INPUT
    if not args.timeline_max_mb >= 0.0625:  # also rejects nan
        sys.stderr.write(f"{PROG}: error: --timeline-max-mb must be at least 0.0625 (64 KiB)\n")
        return EXIT_BAD_INPUT
    budget = int(args.timeline_max_mb * 1024 * 1024)
    if args.slice_mb is not None and not args.slice_mb >= MIN_SLICE_BYTES / MIB:  # also rejects nan
        sys.stderr.write(f"{PROG}: error: --slice-mb must be at least {MIN_SLICE_BYTES / MIB:g} (64 KiB)\n")
        return EXIT_BAD_INPUT
    slice_bytes = None if args.slice_mb is None else int(args.slice_mb * MIB)

    def work(prof_dir: Path) -> list[Path]:
        paths = write_all_reports(prof_dir, args.timestamp, timeline_budget_bytes=budget, slice_bytes=slice_bytes)
        for p in paths:
            sys.stdout.write(f"{p}\n")
        for note in paths.notes:
            sys.stderr.write(f"{PROG}: note: {note}\n")
        for folder in paths.layout_folders:
            sys.stderr.write(f"{PROG}: note: msprof-analyze / MindStudio Insight folder: {folder}\n")
        return paths

    code, _ = for_each_prof_dir(PROG, args.path, work)
    return code
