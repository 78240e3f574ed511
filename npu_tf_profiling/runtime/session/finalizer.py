"""Whether a Session's close comes from the garbage collector (its ``__del__``), where reports must not be written."""
from __future__ import annotations

import sys


def called_by_finalizer() -> bool:
    """Whether this `close` is a garbage-collected Session's ``__del__``: its reports then wait for the exit.

    A finalizer runs wherever the collector happens to run, also inside an import. Writing the reports
    there starts writer threads and joins them; a writer that imports a module the interrupted import is
    still loading waits on that module's import lock, held by the joined thread, for ever. It happened in
    a fresh clone's ``make test`` (2026-12-07, the stacks from tests/helpers/hang_guard.py; most likely what
    held an earlier CI run for 90 minutes): a test's ``import adbc_driver_sqlite.dbapi`` collected an earlier
    test's unclosed Session, whose reports' database writer needed that same module. A user's script can
    collect an unclosed Session at any import as well. So a finalizer's close only closes;
    ``profiling_run._finish_all`` writes every run's reports at the exit, as it does for runs never closed.
    """
    caller = sys._getframe(2)  # 0: this, 1: the close that asks, 2: who called that close
    return caller.f_code.co_name == "__del__"
