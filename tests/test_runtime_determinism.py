"""Op determinism (`enable_op_determinism`): tf.timestamp refuses to run, so profiling must fall back, not kill the job."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.helpers.trace_files import assert_step_trace_formulas, only_prof_dir, step_trace_rows

SCRIPT = Path(__file__).parent / "scripts" / "deterministic_train.py"


def _train(env_extra: dict[str, str]) -> tuple[dict, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PROFILING_")}
    env.update(env_extra)
    done = subprocess.run([sys.executable, str(SCRIPT)], env=env, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1]), done.stderr


def test_determinism_job_finishes_with_a_full_step_trace_and_identical_results(tmp_path) -> None:
    plain, _ = _train({})
    profiled, stderr = _train({"PROFILING_MODE": "true", "PROFILING_OPTIONS": json.dumps({"output": str(tmp_path), "training_trace": "on"})})
    assert profiled == plain  # same losses and weights, bit for bit
    assert stderr.count("op determinism is enabled") == 1, stderr  # one warning says why
    _, rows = step_trace_rows(tmp_path)
    assert [r["Iteration ID"] for r in rows] == [str(i) for i in range(1, 13)]
    assert_step_trace_formulas(rows)  # the host clock measures every column, in physical order
    assert all(r["GetNext End(us)"] != "N/A" for r in rows)
    info = json.loads(next(only_prof_dir(tmp_path).glob("device_*/info.json")).read_text())
    assert any("determinism" in note and "numpy_function" in note for note in info["notes"]), info["notes"]
