"""The suite's hang guard (tests/helpers/hang_guard.py) on a pytest-xdist run of its own, with `make test`'s flags: a
test past its limit fails, the process it started is killed, its stacks are printed at the end, and the run ends
(the other worker's file done) instead of waiting for ever."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import psutil

REPO = Path(__file__).resolve().parents[1]
HUNG = '''
import subprocess, sys, time
from pathlib import Path

def test_hangs_with_a_child():
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"])  # inherits the worker's pipes
    Path("child.pid").write_text(str(child.pid))
    time.sleep(120)

def test_after_it():
    pass
'''
OTHER = "def test_elsewhere():\n    pass\n"


def test_a_hung_test_fails_its_child_is_killed_and_its_stacks_are_printed(tmp_path: Path) -> None:
    (tmp_path / "test_hung.py").write_text(HUNG)
    (tmp_path / "test_other.py").write_text(OTHER)
    (tmp_path / "conftest.py").write_text("from tests.helpers.hang_guard import pytest_configure, pytest_terminal_summary, "
                                          "pytest_timeout_set_timer  # noqa: F401\n")
    env = dict(os.environ, PYTHONPATH=str(REPO))
    env.pop("PYTEST_XDIST_WORKER", None)  # the inner run is a controller of its own
    env.pop("NPU_TF_PROF_TEST_HANGS", None)
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-n", "2", "--dist", "loadfile", "--max-worker-restart=0",
                           "-p", "no:cacheprovider", "--timeout", "2", "-o", "timeout_method=thread", "test_hung.py",
                           "test_other.py"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=90)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "1 failed, 1 passed" in done.stdout and "worker 'gw" in done.stdout  # the other file ran; the run ended
    assert "test_hung.py::test_hangs_with_a_child: still running after its 2 s limit" in done.stdout
    assert 'line 8 in test_hangs_with_a_child' in done.stdout  # the hung test's own frame, from the worker's file
    child = int((tmp_path / "child.pid").read_text())
    assert f"killed child process {child} " in done.stdout
    assert not psutil.pid_exists(child) or psutil.Process(child).status() == psutil.STATUS_ZOMBIE
