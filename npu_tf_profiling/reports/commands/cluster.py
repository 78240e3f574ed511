"""``npu-tf-prof cluster OUTPUT_DIR``: merge every rank's data and say which rank is slow.

OUTPUT_DIR is the folder the workers profiled into (holding their PROF_*
folders; sub-folders per host are searched too). Writes
``OUTPUT_DIR/npu_tf_prof_cluster/`` (or ``--output-dir``): the msprof-analyze
style ``cluster_step_trace_time.csv``, ``slow_rank.json`` + ``slow_rank.txt``
and ``cluster_timeline.json`` (past 32 ranks, the ranks the verdict names and a
yardstick; ``--timeline all``: every rank); writes the msprof-analyze folder
of a rank that lacks one (a killed worker never wrote its reports) when at most
16 do, else says which (``--layouts``: all of them); prints the verdict
(``--json``: slow_rank.json) on stdout and the written files on stderr. Missing steps are reported, and do
not fail the command. The per-rank work runs as Dask tasks: in this process by
default, on a running Dask cluster with ``--scheduler tcp://HOST:PORT`` (or
``DASK_SCHEDULER_ADDRESS``); without Dask installed it says how to install it. Exit codes: 0 written, 2 bad input (missing path, a
device folder, two folders claiming one rank, unreadable data), 3 no
iteration records. Never imports TensorFlow.
"""
from __future__ import annotations

import argparse
import sys

from npu_tf_profiling.reports.cluster import timeline as ctl
from npu_tf_profiling.reports.cluster import timeline_focus as tfo
from npu_tf_profiling.reports.cluster.rank_layouts import AUTO_FILL_MAX
from npu_tf_profiling.reports.cluster import slow_rank as sr
from npu_tf_profiling.reports.cluster.engine import SCHEDULER_ENV, scheduler_address
from npu_tf_profiling.exit_codes import EXIT_OK
from npu_tf_profiling.reports.commands.common import warnings_to
from npu_tf_profiling.reports.cluster.analysis import write_cluster_analysis
from npu_tf_profiling.reports.errors import ReportError

PROG = "npu-tf-prof cluster"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", metavar="OUTPUT_DIR", help="the output folder holding every rank's PROF_* folder")
    parser.add_argument("--output-dir", metavar="DIR", help="where to write (default: OUTPUT_DIR/npu_tf_prof_cluster)")
    parser.add_argument("--json", action="store_true", help="print slow_rank.json instead of the text verdict")
    parser.add_argument("--align", choices=ctl.ALIGN_CHOICES, default=ctl.ALIGN_AUTO,
                        help="timeline clocks: auto (shift only across hosts), none, reduce (always shift)")
    parser.add_argument("--no-tasks", action="store_true", help="leave task_trace tasks out of the timeline")
    parser.add_argument("--timeline", choices=tfo.TIMELINE_CHOICES, default=tfo.TIMELINE_AUTO,
                        help=f"ranks in the merged timeline: auto (every rank up to {tfo.ALL_RANKS_MAX}, else those the verdict "
                             "names, a typical and the fastest one), all (every rank, grouped per host into files that open)")
    parser.add_argument("--layouts", action="store_true",
                        help="write the msprof-analyze folder of every rank lacking one (by default only when at most "
                             f"{AUTO_FILL_MAX} do: about 0.2 s a rank of 1,000 steps)")
    parser.add_argument("--min-share", type=float, default=sr.Settings.min_share,
                        help="share of steps that makes a rank consistently slow / waited for (default 0.5)")
    parser.add_argument("--scheduler", metavar="tcp://HOST:PORT",
                        help=f"run the per-rank tasks on this Dask scheduler's workers (default: ${SCHEDULER_ENV}, "
                             "else Dask's local scheduler in this process, one task at a time: 'sync'); workers read the rank "
                             "folders at the same path. 'threads': a thread pool in this process (for rank folders on a network "
                             "file system); 'processes': a pool of processes on this host (every core, no server)")


def run(args: argparse.Namespace) -> int:
    if not 0 < args.min_share <= 1:
        sys.stderr.write(f"{PROG}: error: --min-share must be in (0, 1], not {args.min_share}\n")
        return 2
    settings = sr.Settings(min_share=args.min_share)
    with warnings_to(PROG, sys.stderr):
        try:
            analysis = write_cluster_analysis(args.path, args.output_dir, settings, args.align, with_tasks=not args.no_tasks,
                                              scheduler=scheduler_address(args.scheduler), timeline=args.timeline,
                                              layouts=args.layouts)
        except ReportError as exc:
            sys.stderr.write(f"{PROG}: error: {exc}\n")
            return exc.exit_code
        except OSError as exc:
            sys.stderr.write(f"{PROG}: error: {exc}\n")
            return 2
    sys.stdout.write(analysis.report.to_json() if args.json else analysis.report.verdict)
    for path in analysis.paths:
        sys.stderr.write(f"{PROG}: wrote {path}\n")
    for note in analysis.file_notes:
        sys.stderr.write(f"{PROG}: note: {note}\n")
    return EXIT_OK
