"""``npu-tf-prof view PATH [-o FILE]``: one offline HTML page of charts for a run, an output folder or a cluster.

PATH is a PROF_* folder, a folder holding PROF_* folders, or a cluster's
output folder (``reports.view.build`` says what the page holds and where it
goes); ``--compare CANDIDATE`` puts ``diff``'s comparison with another run
first (``reports.view.compare_section``). Prints the page's path on stdout; warnings about raw data go to stderr.
Exit codes: 0 written, 2 bad input (missing path, a file, a device folder,
unreadable data, plotly not installed: the message gives the pip line),
3 nothing to draw (no PROF_* folder, no iteration records). Never imports TensorFlow.
"""
from __future__ import annotations

import argparse
import sys

from npu_tf_profiling.reports.commands.common import run_guarded

PROG = "npu-tf-prof view"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", metavar="PROF_DIR_OR_OUTPUT", help="a PROF_* folder, or a folder holding PROF_* folders (a cluster)")
    parser.add_argument("-o", "--output", metavar="FILE",
                        help="the page to write (default: view.html beside the reports: PROF_*/mindstudio_profiler_output/, "
                             "or OUTPUT/npu_tf_prof_cluster/ for several PROF folders; view_compare.html with --compare)")
    parser.add_argument("--compare", metavar="CANDIDATE",
                        help="another run to compare with (as npu-tf-prof diff PATH CANDIDATE): each phase's two distributions, overlaid")


def run(args: argparse.Namespace) -> int:
    from npu_tf_profiling.reports.view.build import write_view

    code, path = run_guarded(PROG, lambda: write_view(args.path, args.output, args.compare))
    if path is not None:
        sys.stdout.write(f"{path}\n")
    return code
