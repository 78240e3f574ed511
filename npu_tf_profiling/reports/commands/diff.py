"""``npu-tf-prof diff BASELINE CANDIDATE [--json] [--threshold PCT] [--model ID]``: did training get slower, where, how sure.

Each side is a PROF_* folder or an output folder (one device or a cluster),
read as ``view`` reads it. The first line is the verdict
(``reports.diff.compare`` gives the rules and why the default threshold is
10%); ``--json`` prints the same as one object. Exit codes: 0 no regression
past the threshold, 4 a regression past it, 2 bad input (missing path, a file,
a device folder, unreadable data, a bad option), 3 nothing to compare (no
PROF_* folder or no iterations on a side, no model in both). Never imports TensorFlow.
"""
from __future__ import annotations

import argparse
import math
import sys

from npu_tf_profiling.exit_codes import EXIT_BAD_INPUT
from npu_tf_profiling.reports.commands.common import run_guarded
from npu_tf_profiling.reports.diff.compare import DEFAULT_THRESHOLD_PCT

PROG = "npu-tf-prof diff"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("baseline", metavar="BASELINE", help="the run before the change: a PROF_* folder or an output folder")
    parser.add_argument("candidate", metavar="CANDIDATE", help="the run after the change")
    parser.add_argument("--json", action="store_true", help="print JSON instead of text")
    parser.add_argument("--threshold", type=float, default=DEFAULT_THRESHOLD_PCT, metavar="PCT",
                        help=f"smallest change, in %% of the baseline's median, that counts (default {DEFAULT_THRESHOLD_PCT:g})")
    parser.add_argument("--model", type=int, metavar="ID", help="compare this Model ID only")


def run(args: argparse.Namespace) -> int:
    if not math.isfinite(args.threshold) or args.threshold < 0:
        sys.stderr.write(f"{PROG}: error: --threshold must be a percentage >= 0, not {args.threshold}\n")
        return EXIT_BAD_INPUT
    from npu_tf_profiling.reports.diff.compare import compare_sides
    from npu_tf_profiling.reports.diff.render import render_json, render_text
    from npu_tf_profiling.reports.diff.sides import read_side

    code, report = run_guarded(PROG, lambda: compare_sides(read_side(args.baseline), read_side(args.candidate),
                                                           args.threshold, args.model))
    if report is None:
        return code
    sys.stdout.write(render_json(report) if args.json else render_text(report))
    return report.exit_code
