"""Expensive test inputs made once per test run, even when pytest-xdist spreads the files over processes.

A session fixture runs once per xdist worker: `make test`'s two workers each
started the same TensorFlow jobs (the 2-worker job, the plain TF2 runs) for
their own files. Here the first worker to need an input makes it in the run's
shared temp folder, under a file lock, and the others wait for it and read it;
each gets its own copy, so a test that writes into its input (a report, a cluster
analysis) never changes another worker's. Without xdist it is made as before.
"""
from __future__ import annotations

import fcntl
import os
import shutil
import threading
from pathlib import Path
from typing import Callable

import pytest

DONE = ".made"


def made_once(tmp_path_factory: pytest.TempPathFactory, name: str, make: Callable[[Path], None]) -> Path:
    """A folder `make` filled once for the whole run; this process's own copy of it."""
    mine = tmp_path_factory.mktemp(name)
    if "PYTEST_XDIST_WORKER" not in os.environ:
        make(mine)
        return mine
    root = tmp_path_factory.getbasetemp().parent  # the run's folder, above every worker's (popen-gw0, ...)
    shared = root / f"shared-{name}"
    with open(root / f"shared-{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes, also if `make` raises
        if not (shared / DONE).exists():
            shutil.rmtree(shared, ignore_errors=True)  # what another worker's failed attempt left
            shared.mkdir()
            make(shared)
            (shared / DONE).touch()
    shutil.copytree(shared, mine, dirs_exist_ok=True, ignore=shutil.ignore_patterns(DONE))
    return mine


class InBackground:
    """Results made in a thread, read at first use: the first test's own TensorFlow run goes on beside the making
    (the profiled run and its plain twin ran side by side when each test made both; 2 cores, most of it waiting)."""

    def __init__(self, make: Callable[[], dict]) -> None:
        self._result: dict | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._make, args=(make,), daemon=True)
        self._thread.start()

    def _make(self, make: Callable[[], dict]) -> None:
        try:
            self._result = make()
        except BaseException as error:  # noqa: BLE001 - kept whole, raised again in the test that reads the result
            self._error = error

    def __getitem__(self, key: str) -> dict:
        self._thread.join()
        if self._error is not None:
            raise self._error
        assert self._result is not None
        return self._result[key]
