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


def _sample(script: str, steps: int, tmp_path: Path) -> str:
    out = _run([sys.executable, str(SAMPLES / script), "--steps", str(steps), "--output", str(tmp_path / "prof")], tmp_path)
    assert "first rows of step_trace_" in out and f"({steps} iterations)" in out
    assert "input-bound" in out  # the summary's verdict line
    return out


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory) -> Path:
    """`make demo`'s sample (fewer steps), run once: its output folder."""
    tmp_path = tmp_path_factory.mktemp("demo")
    _sample("estimator_profiling.py", 8, tmp_path)
    return tmp_path / "prof"


def test_estimator_sample(demo_run) -> None:
    assert len(list(demo_run.glob("PROF_*"))) == 1


def test_sess_run_sample(tmp_path) -> None:
    _sample("sess_run_profiling.py", 6, tmp_path)


def test_demo_view_opens_in_a_browser(demo_run, capsys) -> None:
    """What `make demo` ends with: the run's page, opened in headless Chromium."""
    from npu_tf_profiling.cli import main
    from tests.helpers.browser import open_page
    from tests.test_view_browser import assert_drawn

    prof = next(demo_run.glob("PROF_*"))
    assert main(["view", str(prof)]) == 0
    page = Path(capsys.readouterr().out.strip())
    assert page == prof / "mindstudio_profiler_output" / "view.html"
    opened = open_page(page)
    assert_drawn(opened, charts=2)  # one model: its phases and its distribution
    assert "Device 0, Model ID 1: 8 iterations" in opened.dom


def test_env_sample_profiles_an_unmodified_script(tmp_path) -> None:
    out = _run(["bash", str(SAMPLES / "env_profiling.sh"), str(tmp_path / "prof")], tmp_path, STEPS="6")
    assert "(6 iterations)" in out
    assert "npu_tf_profiling" not in (SAMPLES / "plain_tf_train.py").read_text()
