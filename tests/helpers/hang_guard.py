"""A test past its time limit ends its process *and the processes it started*, and says where each thread was.

pytest-timeout's thread method (pytest.ini says why not the signal one) dumps the
stacks and calls ``os._exit``, and the processes the test started outlive it: a
TensorFlow worker waiting on a collective whose peer is gone keeps its CPU and
ports for the rest of the run (a planted ``sleep`` child was still alive after
the run ended, 2026-12-07). So the timer here kills every descendant first, then
writes every thread's stack, then exits; xdist reports the test as failed with
its worker crashed (and `make test` ends the phase: pytest.ini).

An xdist worker's stderr reaches nobody, so the stacks go to a file in a folder
the controller made (``HANGS_ENV``), and the controller prints every such file
at the end of the run, in its terminal summary; a run without xdist also gets
them on stderr at once.
"""
from __future__ import annotations

import faulthandler
import os
import shutil
import sys
import tempfile
import threading
from pathlib import Path

import psutil
import pytest

HANGS_ENV = "NPU_TF_PROF_TEST_HANGS"  # the folder of this run's stack files, made by the controller (workers inherit it)


def _kill_descendants() -> list[str]:
    """Kill every process this one started, children of children included; what was killed, for the log."""
    killed = []
    for child in psutil.Process().children(recursive=True):
        try:
            killed.append(f"{child.pid} {' '.join(child.cmdline())[:160]}")
            child.kill()
        except psutil.Error:
            pass  # gone already
    return killed


def _expired(nodeid: str, timeout: float) -> None:
    try:
        folder = Path(os.environ.get(HANGS_ENV) or tempfile.gettempdir())
        with open(folder / f"hang-{os.getpid()}.txt", "w") as dump:
            dump.write(f"{nodeid}: still running after its {timeout:g} s limit; every thread's stack:\n")
            dump.flush()
            faulthandler.dump_traceback(file=dump, all_threads=True)
            for line in _kill_descendants():
                dump.write(f"killed child process {line}\n")
        if "PYTEST_XDIST_WORKER" not in os.environ:
            sys.__stderr__.write((folder / f"hang-{os.getpid()}.txt").read_text())
            sys.__stderr__.flush()
    finally:
        os._exit(1)


def pytest_configure(config: pytest.Config) -> None:
    if "PYTEST_XDIST_WORKER" not in os.environ:  # the controller, or a run without xdist
        os.environ[HANGS_ENV] = tempfile.mkdtemp(prefix="npu-tf-prof-test-hangs-")


def pytest_terminal_summary(terminalreporter) -> None:
    """Every hung test's stacks, from the files its worker wrote before it ended (module docstring)."""
    folder = os.environ.get(HANGS_ENV)
    if "PYTEST_XDIST_WORKER" in os.environ or not folder or not Path(folder).is_dir():
        return
    for dump in sorted(Path(folder).glob("hang-*.txt")):
        terminalreporter.section(f"hung test ({dump.name})", sep="+")
        terminalreporter.write(dump.read_text())
    shutil.rmtree(folder, ignore_errors=True)


@pytest.hookimpl(tryfirst=True)
def pytest_timeout_set_timer(item: pytest.Item, settings) -> bool | None:
    """The thread method's timer, with the descendants killed (module docstring); other methods are left to pytest-timeout."""
    if settings.method != "thread" or not settings.timeout:
        return None
    timer = threading.Timer(settings.timeout, _expired, (item.nodeid, settings.timeout))
    timer.daemon = True
    timer.name = f"hang guard {item.nodeid}"

    def cancel() -> None:
        timer.cancel()
        timer.join()

    item.cancel_timeout = cancel  # what pytest-timeout's own cancel hook calls
    timer.start()
    return True
