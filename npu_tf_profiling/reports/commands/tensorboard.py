"""``npu-tf-prof tensorboard PATH --logdir DIR``: the step phases as TensorBoard scalars.

PATH is a PROF_* folder, a folder holding PROF_* folders, or a cluster's output
folder (per-host sub-folders too, as ``cluster`` finds them). Writes one run per
(rank, model) under DIR (``reports.exporters.tensorboard``) and prints each event
file on stdout; then ``tensorboard --logdir DIR``. Exit codes: 0 written, 2 bad
input (missing path, a device folder, two folders holding one rank, tensorboard
not installed: the message gives the pip line), 3 nothing found (no PROF_*
folder, no iteration records). Never imports TensorFlow.
"""
from __future__ import annotations

import argparse
import sys

from npu_tf_profiling.reports.cluster.data import require_prof_dirs_below
from npu_tf_profiling.reports.commands.common import run_guarded
from npu_tf_profiling.reports.exporters.tensorboard import write_tensorboard

PROG = "npu-tf-prof tensorboard"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", metavar="PROF_DIR_OR_OUTPUT", help="a PROF_* folder, or a folder holding PROF_* folders (a cluster)")
    parser.add_argument("--logdir", metavar="DIR", required=True, help="TensorBoard's log folder (created if missing)")


def run(args: argparse.Namespace) -> int:
    code, runs = run_guarded(PROG, lambda: write_tensorboard(require_prof_dirs_below(args.path), args.logdir))
    for written in runs or []:
        sys.stdout.write(f"{written.path}\n")
    if runs:
        sys.stderr.write(f"{PROG}: {len(runs)} run(s); open them with: tensorboard --logdir {args.logdir}\n")
    return code
