"""``npu-tf-prof summary PATH [--json]``: where the iteration time goes, per model.

PATH is a PROF_* folder or an output folder holding several. Text by default;
``--json`` prints a JSON array with one object per PROF folder (always an
array, whatever PATH is, so scripts need one shape). Exit codes as for
``report``: 0, 2 bad input, 3 no iterations. Never imports TensorFlow.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from npu_tf_profiling.exit_codes import EXIT_OK
from npu_tf_profiling.reports.commands.common import for_each_prof_dir
from npu_tf_profiling.reports.advise.engine import summary_with_top_finding
from npu_tf_profiling.reports.step.summary import ProfSummary

PROG = "npu-tf-prof summary"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", metavar="PROF_DIR", help="a PROF_* folder, or a folder holding PROF_* folders")
    parser.add_argument("--json", action="store_true", help="print JSON instead of text")


def run(args: argparse.Namespace) -> int:
    def work(prof_dir: Path) -> ProfSummary:
        summary = summary_with_top_finding(prof_dir)
        if not args.json:
            sys.stdout.write(summary.render_text())
        return summary

    code, summaries = for_each_prof_dir(PROG, args.path, work)
    if args.json and (summaries or code == EXIT_OK):
        sys.stdout.write(json.dumps([s.to_dict() for s in summaries], indent=2) + "\n")
    return code
