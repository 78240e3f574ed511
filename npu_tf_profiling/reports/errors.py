"""Errors the report commands turn into exit codes.

Kept apart from the analyzers so a caller (the runtime writing reports at
session close, a later cluster command) can catch "bad input" and "nothing
found" without string matching, and so the CLI maps them to the documented
exit codes (2 and 3) in one place.
"""
from __future__ import annotations

from npu_tf_profiling.exit_codes import EXIT_BAD_INPUT, EXIT_NOT_FOUND
from npu_tf_profiling.raw_format.errors import RawDataWarning

__all__ = ["BadInputError", "MissingDependencyError", "NothingFoundError", "RawDataWarning", "ReportError"]


class ReportError(Exception):
    """Base class: something prevented a report; ``exit_code`` says what kind."""

    exit_code = EXIT_BAD_INPUT


class BadInputError(ReportError):
    """The path is missing, is not a PROF_* folder, or cannot be read."""

    exit_code = EXIT_BAD_INPUT


class NothingFoundError(ReportError):
    """The folder is a PROF_* folder but holds no iteration records."""

    exit_code = EXIT_NOT_FOUND


class MissingDependencyError(ReportError):
    """An optional package a command draws or writes with (plotly, tensorboard) is not installed.

    Exit code 2, as for a bad command: the message names the package and the
    pip line that installs it.
    """

    exit_code = EXIT_BAD_INPUT
