"""The samples a new user runs first must keep working (each is a real, short training job)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

SAMPLES = Path(__file__).resolve().parents[1] / "samples"


def _run(command: list[str], tmp_path: Path, **env: str) -> str:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("PROFILING_")}
    environ.update(env, PYTHON=sys.executable)
    done = subprocess.run(command, cwd=tmp_path, env=environ, capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


@pytest.mark.parametrize("script,steps", [("estimator_profiling.py", 8), ("sess_run_profiling.py", 6)])
def test_python_samples(tmp_path, script, steps) -> None:
    out = _run([sys.executable, str(SAMPLES / script), "--steps", str(steps), "--output", str(tmp_path / "prof")], tmp_path)
    assert "first rows of step_trace_" in out and f"({steps} iterations)" in out
    assert "input-bound" in out  # the summary's verdict line


def test_env_sample_profiles_an_unmodified_script(tmp_path) -> None:
    out = _run(["bash", str(SAMPLES / "env_profiling.sh"), str(tmp_path / "prof")], tmp_path, STEPS="6")
    assert "(6 iterations)" in out
    assert "npu_tf_profiling" not in (SAMPLES / "plain_tf_train.py").read_text()
