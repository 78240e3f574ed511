"""What ``report`` and ``summary`` share: resolving the path, warnings, exit codes.

Warnings about raw data are part of the command's output (a user must learn
that lines were skipped), so they are printed as one plain line each on
stderr rather than in Python's source-location format.
"""
from __future__ import annotations

import sys
import warnings
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator, Optional, TextIO, TypeVar

from npu_tf_profiling.exit_codes import EXIT_BAD_INPUT, EXIT_NOT_FOUND, EXIT_OK
from npu_tf_profiling.reports.errors import NothingFoundError, ReportError
from npu_tf_profiling.reports.prof_dir import find_prof_dirs
T = TypeVar("T")


@contextmanager
def warnings_to(prog: str, stream: TextIO) -> Iterator[None]:
    """Print every warning raised inside as ``<prog>: warning: <message>``."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            yield
        finally:
            for w in caught:
                stream.write(f"{prog}: warning: {w.message}\n")


def run_guarded(prog: str, work: Callable[[], T]) -> tuple[int, Optional[T]]:
    """Run ``work`` once (a command over a whole job: ``view``, ``tensorboard``); return (exit code, result).

    Warnings are printed as lines; a ``ReportError`` or ``OSError`` becomes one
    ``<prog>: error:`` line and its exit code (2 for an ``OSError``), with no result.
    """
    with warnings_to(prog, sys.stderr):
        try:
            return EXIT_OK, work()
        except ReportError as exc:
            sys.stderr.write(f"{prog}: error: {exc}\n")
            return exc.exit_code, None
        except OSError as exc:
            sys.stderr.write(f"{prog}: error: {exc}\n")
            return EXIT_BAD_INPUT, None


def for_each_prof_dir(prog: str, path: str, work: Callable[[Path], T]) -> tuple[int, list[T]]:
    """Run ``work`` on each PROF folder ``path`` names; return (exit code, results).

    Exit code: 2 if the path is bad or any PROF folder could not be read, else
    3 if none had iterations, else 0. A PROF folder without iterations among
    others is reported on stderr and does not fail the rest.
    """
    err = sys.stderr
    try:
        prof_dirs = find_prof_dirs(path)
    except ReportError as exc:
        err.write(f"{prog}: error: {exc}\n")
        return exc.exit_code, []
    results: list[T] = []
    bad = False
    for prof_dir in prof_dirs:
        with warnings_to(prog, err):
            try:
                results.append(work(prof_dir))
            except NothingFoundError as exc:
                err.write(f"{prog}: nothing to report: {exc}\n")
            except ReportError as exc:
                err.write(f"{prog}: error: {exc}\n")
                bad = True
            except BrokenPipeError:
                raise  # our reader went away (`| head`), not a bad folder: the CLI ends quietly
            except OSError as exc:
                err.write(f"{prog}: error: {prof_dir}: {exc}\n")
                bad = True
    if bad:
        return EXIT_BAD_INPUT, results
    if not results:
        return EXIT_NOT_FOUND, results
    return EXIT_OK, results
