"""`npu-tf-prof`: the command-line front door.

Each sub-command lives next to the room it belongs to (``graph_points.command``,
``reports.command``...) and is imported only when chosen, so `report` and
`cluster` never pay for importing TensorFlow.

Exit codes (``exit_codes``): 0 success, 2 bad input (missing/corrupt file, bad
arguments), 3 nothing found (e.g. no fp/bp points), 4 a regression past the
threshold (``diff``). Sub-commands return these.

A reader that stops early (``npu-tf-prof points g.pbtxt | head``) closes the
pipe under us. Well-behaved Unix tools then die of SIGPIPE without a word, and
the shell reports 141 (128 + SIGPIPE); every sub-command does the same here:
no traceback, nothing more written, exit code 141, so ``set -o pipefail``
scripts see what they would see for ``cat``.
"""
from __future__ import annotations

import argparse
import importlib
import os
import sys
from typing import Callable, Sequence

from npu_tf_profiling.exit_codes import EXIT_BAD_INPUT, EXIT_BROKEN_PIPE, EXIT_OK

# sub-command name -> module that defines `add_arguments(parser)` and `run(args) -> int`
SUBCOMMANDS: dict[str, str] = {
    "points": "npu_tf_profiling.graph_points.command",
    "report": "npu_tf_profiling.reports.commands.report",
    "summary": "npu_tf_profiling.reports.commands.summary",
    "cluster": "npu_tf_profiling.reports.commands.cluster",
    "view": "npu_tf_profiling.reports.commands.view",
    "diff": "npu_tf_profiling.reports.commands.diff",
    "tensorboard": "npu_tf_profiling.reports.commands.tensorboard",
    "watch": "npu_tf_profiling.reports.commands.watch",
    "run": "npu_tf_profiling.bridge.launch.launcher",
    "advise": "npu_tf_profiling.reports.commands.advise",
}

SUBCOMMAND_HELP: dict[str, str] = {
    "points": "find fp/bp/GetNext/all-reduce/iteration-end points in a saved graph",
    "report": "(re)build step_trace CSV/JSON reports from a PROF_* folder's raw data",
    "summary": "print a short summary of a PROF_* folder (where the iteration time goes)",
    "cluster": "merge every rank of a multi-worker run: cluster step trace, slow ranks, one timeline",
    "view": "write one offline HTML page of charts (phases, distribution, slowest iterations, top ops, ranks)",
    "diff": "compare two runs per model and phase (medians, p90s, 95% CI): exit code 4 when Iteration Time regressed",
    "tensorboard": "write the step phases as TensorBoard scalars (one run per model and rank): --logdir DIR",
    "watch": "follow a running job (one or many ranks): a line every second; exit 0 when it ends, 5 if it was killed",
    "advise": "the knob to turn, the line that sets it, and the expected gain (findings ordered by gain; --json)",
    "run": "run an unmodified Ascend (npu_bridge) script on CPU/GPU TensorFlow: npu-tf-prof run [--tf1] SCRIPT [ARGS...]",
}


def _load(name: str) -> tuple[Callable[[argparse.ArgumentParser], None], Callable[[argparse.Namespace], int]]:
    module = importlib.import_module(SUBCOMMANDS[name])
    return module.add_arguments, module.run


def main(argv: Sequence[str] | None = None) -> int:
    try:
        code = _main(argv)
        sys.stdout.flush()  # inside the try: a pipe closed early fails here, not at interpreter exit
        return code
    except BrokenPipeError:
        _silence_closed_streams()
        return EXIT_BROKEN_PIPE


def _silence_closed_streams() -> None:
    """Point stdout and stderr at /dev/null so the interpreter's final flush of
    what is still buffered cannot raise a second BrokenPipeError at exit."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        for stream in (sys.stdout, sys.stderr):
            try:
                os.dup2(devnull, stream.fileno())
            except (OSError, ValueError):  # no real file behind it (captured, or already closed)
                pass
    finally:
        os.close(devnull)


def _main(argv: Sequence[str] | None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = argparse.ArgumentParser(prog="npu-tf-prof", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, help_text in SUBCOMMAND_HELP.items():
        # argparse %-formats a sub-command's help (for %(prog)s): diff's "95% CI" would stop --help with a ValueError
        sub.add_parser(name, help=help_text.replace("%", "%%"), add_help=False)
    # Parse the command name first so only the chosen sub-command's module is imported.
    if not argv or argv[0] in ("-h", "--help") or argv[0] not in SUBCOMMANDS:
        try:
            parser.parse_args(argv or ["--help"])
        except SystemExit as exc:
            return EXIT_OK if exc.code == 0 else EXIT_BAD_INPUT
        return EXIT_BAD_INPUT
    name = argv[0]
    add_arguments, run = _load(name)
    sub_parser = argparse.ArgumentParser(prog=f"npu-tf-prof {name}", description=SUBCOMMAND_HELP[name])
    add_arguments(sub_parser)
    try:
        args = sub_parser.parse_args(argv[1:])
    except SystemExit as exc:
        return EXIT_OK if exc.code == 0 else EXIT_BAD_INPUT
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
