"""Keras graph-mode training (eager disabled) is profiled too: its steps are session callables."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.helpers.trace_files import assert_step_trace_formulas, step_trace_rows

SCRIPT = Path(__file__).parent / "scripts" / "keras_fit.py"


def _fit(env_extra: dict[str, str]) -> list[float]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PROFILING_")}
    env.update(env_extra)
    done = subprocess.run([sys.executable, str(SCRIPT)], env=env, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_keras_fit_in_graph_mode_is_profiled_without_changing_it(tmp_path) -> None:
    plain = _fit({})
    profiled = _fit({"PROFILING_MODE": "true", "PROFILING_OPTIONS": json.dumps({"output": str(tmp_path), "training_trace": "on"})})
    assert profiled == plain  # same losses, epoch by epoch
    _, rows = step_trace_rows(tmp_path)
    assert [r["Iteration ID"] for r in rows] == [str(i) for i in range(1, 9)]  # 64 samples / 16 per batch x 2 epochs
    assert_step_trace_formulas(rows)
