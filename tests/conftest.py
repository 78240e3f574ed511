"""Shared test set-up: a clean profiling environment for every test.

Tests must not inherit PROFILING_* variables from the shell that runs them, nor
the once-per-process notes an earlier test showed; TensorFlow's own logging is
quietened so failures stay readable.
"""
from __future__ import annotations

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import pytest

import npu_tf_profiling  # noqa: F401  (installs the Session integration)
from npu_tf_profiling.config.notices import forget_shown

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
    """A 2-worker MultiWorkerMirroredStrategy job, task_trace on steps 10-12; run once, read by several modules.

    Tests that run a tool writing into its input folder (msprof-analyze without -o) work on a copy.
    """
    from tests.helpers.multi_worker_jobs import run_job

    return run_job(tmp_path_factory, "two_workers", 2, extra=["--task-trace"])
