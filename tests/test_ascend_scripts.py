"""Ascend ModelZoo-style scripts run unmodified through `npu-tf-prof run --tf1` with env-var profiling.

The scripts in tests/scripts/ are written as ModelZoo-TensorFlow's migrated
TF 1.15 scripts are (npu_init star import, NpuOptimizer session config, loss
scaling, npu_bridge.estimator.npu.* imports, one Estimator, one with
iterations_per_loop, one built with tf.contrib.slim / layers / data / HParams that
reads RANK_SIZE at import, one star-importing contrib.layers and training with optimize_loss, one
BERT-style TPUEstimator with use_tpu off). Each must produce a step trace with one row per iteration.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.trace_files import assert_step_trace_formulas, step_trace_rows

SCRIPTS = Path(__file__).parent / "scripts"
CONSOLE_SCRIPT = str(Path(sys.executable).parent / "npu-tf-prof")


@pytest.mark.parametrize(
    "script,args,iterations",
    [
        ("ascend_lenet_sess_run.py", ["--steps", "12"], 12),
        ("ascend_mlp_iterations_per_loop.py", ["--training_steps", "20", "--iterations_per_loop", "5"], 20),
        ("ascend_estimator.py", ["--train_steps", "16", "--model_dir", "{tmp}/model"], 16),
        ("ascend_slim_train.py", ["--steps", "10", "--hparams", "filters=[4,8]"], 10),  # tf.contrib.slim/layers/data
        ("ascend_slim_star_optimize_loss.py", ["--steps", "20"], 20),  # contrib.layers star import, optimize_loss
        ("ascend_bert_tpu_names.py", ["--output_dir", "{tmp}/model"], 20),  # tf.contrib.tpu names, use_tpu off
    ],
)
def test_script_runs_unmodified_with_one_row_per_iteration(tmp_path: Path, script: str, args: list[str], iterations: int) -> None:
    source = (SCRIPTS / script).read_text()
    assert "from npu_bridge.npu_init import *" in source and "import npu_tf_profiling" not in source
    assert "from npu_tf_profiling" not in source
    environ = {k: v for k, v in os.environ.items() if not k.startswith("PROFILING_")}
    environ.update(
        TF_CPP_MIN_LOG_LEVEL="2",
        PROFILING_MODE="true",
        PROFILING_OPTIONS=json.dumps({"output": str(tmp_path / "prof"), "training_trace": "on"}),
    )
    command = [CONSOLE_SCRIPT, "run", "--tf1", str(SCRIPTS / script), *(a.format(tmp=tmp_path) for a in args)]
    done = subprocess.run(command, cwd=tmp_path, env=environ, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-4000:]
    assert f"global_step: {iterations}" in done.stdout
    _, rows = step_trace_rows(tmp_path / "prof")
    assert [row["Iteration ID"] for row in rows] == [str(i) for i in range(1, iterations + 1)]
    assert_step_trace_formulas(rows)
