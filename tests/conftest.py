"""Shared test set-up: a clean profiling environment for every test.

Tests must not inherit PROFILING_* variables from the shell that runs them, nor
the once-per-process notes an earlier test showed; TensorFlow's own logging is
quietened so failures stay readable.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import pytest

import npu_tf_profiling  # noqa: F401  (installs the Session integration)
from npu_tf_profiling.config.notices import forget_shown
from tests.helpers.once import InBackground, made_once
from tests.helpers.hang_guard import pytest_configure, pytest_terminal_summary, pytest_timeout_set_timer  # noqa: F401  (hooks)

PROFILING_VARIABLES = (
    "PROFILING_MODE", "PROFILING_OPTIONS", "PROFILING_DYNAMIC_CONFIG", "DEVICE_ID", "RANK_ID", "RANK_SIZE", "TF_CONFIG",
    "RANK_TABLE_FILE", "HCCL_CONNECT_TIMEOUT", "HCCL_EXEC_TIMEOUT", "HCCL_IF_BASE_PORT",
)


@pytest.fixture(autouse=True)
def _clean_profiling_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in PROFILING_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    forget_shown()  # each test is a fresh process as far as once-per-process notes go


@pytest.fixture(scope="session")
def two_workers(tmp_path_factory):
    """A 2-worker MultiWorkerMirroredStrategy job, task_trace on steps 10-12; run once per test run
    (tests.helpers.once: also across xdist workers), read by several modules: (output folder, rank -> exit code).

    Tests that run a tool writing into its input folder (msprof-analyze without -o) work on a copy.
    """
    from tests.helpers.multi_worker_jobs import run_job_into

    def make(folder):
        codes = run_job_into(folder / "out", 2, extra=["--task-trace"])
        (folder / "codes.json").write_text(json.dumps(codes))

    folder = made_once(tmp_path_factory, "two_workers", make)
    return folder / "out", {int(rank): code for rank, code in json.loads((folder / "codes.json").read_text()).items()}


@pytest.fixture(scope="session")
def tf2_plain_runs(tmp_path_factory) -> InBackground:
    """style -> tests/scripts/tf2_train.py's result unprofiled, for the bit-identity checks of the TF2 styles:
    every style in one process (tests/scripts/plain_runs.py), once per test run (tests.helpers.once), made
    beside the first test's own run."""
    from tests.test_tf2_step_trace import PLAIN_STYLES, STEPS

    def make(folder):
        env = {k: v for k, v in os.environ.items() if not k.startswith("PROFILING_")}
        scripts = Path(__file__).parent / "scripts"
        done = subprocess.run([sys.executable, str(scripts / "plain_runs.py"), str(scripts / "tf2_train.py"), str(STEPS), *PLAIN_STYLES],
                              env=env, capture_output=True, text=True, timeout=240)  # under pytest.ini's 300 s: its stderr, not a bare timeout
        assert done.returncode == 0, done.stderr
        (folder / "plain.jsonl").write_text(done.stdout)

    def results() -> dict[str, dict]:
        folder = made_once(tmp_path_factory, "tf2_plain_runs", make)
        lines = (folder / "plain.jsonl").read_text().splitlines()
        return {result["style"]: result for result in map(json.loads, (line for line in lines if line.startswith("{")))}

    tmp_path_factory.getbasetemp()  # made here: pytest makes it at first use, and the thread's first use would race the test's
    return InBackground(results)
