"""Real multi-worker jobs for the tests: the sample's launcher starts MultiWorkerMirroredStrategy workers.

The launcher (samples/multi_worker_profiling.py) picks free ports, gives each
worker its TF_CONFIG, enforces a timeout and, when a worker dies, stops the
others after a grace period, so nothing hangs. Workers import this checkout
(PYTHONPATH), not a stale install.
"""
from __future__ import annotations

import importlib.util
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
STEPS = 30
JOB_TIMEOUT_S = 100  # the launcher stops the workers and fails with their logs past this


def _sample():
    spec = importlib.util.spec_from_file_location("multi_worker_profiling", REPO / "samples" / "multi_worker_profiling.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


SAMPLE = _sample()


def run_job(tmp_path_factory, name: str, workers: int, via: str = "config", extra: list[str] | None = None,
            expect_death: int | None = None, steps: int = STEPS) -> tuple[Path, dict[int, int]]:
    """Run one job into a fresh folder; returns (output folder, rank -> exit code)."""
    out = tmp_path_factory.mktemp(name)
    return out, run_job_into(out, workers, via, extra, expect_death, steps)


def run_job_into(out: Path, workers: int, via: str = "config", extra: list[str] | None = None,
                 expect_death: int | None = None, steps: int = STEPS) -> dict[int, int]:
    """Run one job into `out`; returns rank -> exit code."""
    return SAMPLE.launch_local_workers(
        out, workers, steps, via, extra or [], timeout=JOB_TIMEOUT_S, grace=3.0, expect_death=expect_death,
        extra_env={"PYTHONPATH": str(REPO), "TF_CPP_MIN_LOG_LEVEL": "2"},
    )
