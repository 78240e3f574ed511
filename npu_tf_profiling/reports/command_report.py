"""``npu-tf-prof report PATH``: (re)build the step_trace CSV/JSON from raw data.

PATH is a PROF_* folder or an output folder holding several (each is
reported). Prints the written files, one path per line, on stdout; warnings
and errors go to stderr. Exit codes: 0 written, 2 bad input (missing path,
not a PROF folder, unreadable data, bad --timestamp), 3 no iterations found.
Works offline and never imports TensorFlow.
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from npu_tf_profiling.reports._cli_common import EXIT_BAD_INPUT, for_each_prof_dir
from npu_tf_profiling.reports.errors import BadInputError
from npu_tf_profiling.reports.prof_dir import check_timestamp
from npu_tf_profiling.reports.writer import write_step_trace_reports

PROG = "npu-tf-prof report"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", metavar="PROF_DIR", help="a PROF_* folder, or a folder holding PROF_* folders")
    parser.add_argument(
        "--timestamp",
        metavar="YYYYmmddHHMMSS",
        help="the <ts> in step_trace_<ts>.csv/.json (default: the time in the PROF_* folder name)",
    )


def run(args: argparse.Namespace) -> int:
    if args.timestamp is not None:
        try:
            check_timestamp(args.timestamp)
        except BadInputError as exc:
            sys.stderr.write(f"{PROG}: error: {exc}\n")
            return EXIT_BAD_INPUT

    def work(prof_dir: Path) -> list[Path]:
        paths = write_step_trace_reports(prof_dir, args.timestamp)
        for p in paths:
            sys.stdout.write(f"{p}\n")
        return paths

    code, _ = for_each_prof_dir(PROG, args.path, work)
    return code
