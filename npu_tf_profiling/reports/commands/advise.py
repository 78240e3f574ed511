"""``npu-tf-prof advise PATH [--json]``: the knob to turn, the line that sets it, and the expected gain.

PATH is a PROF_* folder or an output folder holding several (the ranks of one
job: the slowest rank then gets a finding of its own, with its cause). Text by
default; ``--json`` prints a JSON array, one object per PROF folder (schema in
docs/advise.md, ``--schema`` prints it). Exit codes: 0, 2 bad input, 3 no
iterations. Never imports TensorFlow; never changes a file (diffs are printed).
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from npu_tf_profiling.exit_codes import EXIT_BAD_INPUT, EXIT_OK
from npu_tf_profiling.reports.advise.engine import advise_data
from npu_tf_profiling.reports.advise.findings import JSON_SCHEMA, Advice
from npu_tf_profiling.reports.advise.ranks import job_advice
from npu_tf_profiling.reports.cluster.step_table import rank_rows
from npu_tf_profiling.reports.prof_dir import load_prof_dir
from npu_tf_profiling.reports.commands.common import for_each_prof_dir

PROG = "npu-tf-prof advise"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", metavar="PROF_DIR", nargs="?", help="a PROF_* folder, or a folder holding PROF_* folders")
    parser.add_argument("--json", action="store_true", help="print JSON instead of text")
    parser.add_argument("--schema", action="store_true", help="print the JSON schema of --json's output and exit")


def run(args: argparse.Namespace) -> int:
    if args.schema:
        sys.stdout.write(json.dumps(JSON_SCHEMA, indent=2) + "\n")
        return EXIT_OK
    if args.path is None:
        sys.stderr.write(f"{PROG}: error: PROF_DIR is required\n")
        return EXIT_BAD_INPUT
    rows = []  # each folder's rows of the cluster step table: the slow rank is the job's, found across them

    def advise_one(prof_dir: Path) -> Advice:
        data = load_prof_dir(prof_dir)
        advice = advise_data(data)
        rows.append(rank_rows(data.table))
        return advice

    code, advices = for_each_prof_dir(PROG, args.path, advise_one)
    job = job_advice(str(Path(args.path)), advices, rows)
    if job is not None:
        advices.insert(0, job)  # the job's finding first: while one rank holds the others up, it is the one that counts
    if args.json:
        if advices or code == EXIT_OK:
            sys.stdout.write(json.dumps([a.to_dict() for a in advices], indent=2) + "\n")
    else:
        for advice in advices:
            sys.stdout.write(advice.render_text())
    return code
