"""training_trace through NPURunConfig: Estimator train(), repeated train() and train_and_evaluate()."""
from __future__ import annotations

import json

import tensorflow.compat.v1 as tf

from npu_tf_profiling.config import ProfilingConfig
from npu_tf_profiling.bridge.npu_bridge.estimator import NPUEstimator, NPURunConfig
from npu_tf_profiling.raw_format.layout import K_ITERATION_END_CHECK
from npu_tf_profiling.runtime.end_check import SAMPLE_RUNS, SKIP_RUNS
from tests.helpers.models import input_fn, mlp_model_fn
from tests.helpers.trace_files import HEADER, assert_step_trace_formulas, only_prof_dir, step_trace_rows


def run_config(tmp_path, **options) -> NPURunConfig:
    profiling = ProfilingConfig(True, json.dumps({"output": str(tmp_path / "prof"), "training_trace": "on", **options}))
    return NPURunConfig(profiling_config=profiling, model_dir=str(tmp_path / "model"), save_checkpoints_steps=1000, log_step_count_steps=None)


def test_plain_estimator_with_npu_run_config(tmp_path) -> None:
    steps = SKIP_RUNS + SAMPLE_RUNS  # enough for the iteration end's self-check to decide
    estimator = tf.estimator.Estimator(model_fn=mlp_model_fn, config=run_config(tmp_path))
    estimator.train(input_fn=input_fn(), steps=steps)
    header, rows = step_trace_rows(tmp_path / "prof")
    assert header[: len(HEADER)] == HEADER
    assert len(rows) == steps and [r["Iteration ID"] for r in rows] == [str(i) for i in range(1, steps + 1)]
    assert_step_trace_formulas(rows)
    # The train op ends the step: the self-check matched every sampled run with its row and found it on time.
    (model,) = json.loads(next(only_prof_dir(tmp_path / "prof").glob("device_*/info.json")).read_text())["models"].values()
    check = model[K_ITERATION_END_CHECK]
    assert check["checked"] and check["calls"] == SAMPLE_RUNS and not check["early"] and "note" not in check, check


def test_repeated_train_continues_the_global_step_and_eval_is_left_out(tmp_path) -> None:
    estimator = NPUEstimator(model_fn=mlp_model_fn, config=run_config(tmp_path))
    estimator.train(input_fn=input_fn(), steps=6)
    estimator.evaluate(input_fn=input_fn(), steps=3)
    estimator.train(input_fn=input_fn(), steps=4)
    _, rows = step_trace_rows(tmp_path / "prof")
    assert [r["Iteration ID"] for r in rows] == [str(i) for i in range(1, 11)]
    assert {r["Model ID"] for r in rows} == {"1"}  # the same training graph rebuilt is the same model
    info = json.loads(next(only_prof_dir(tmp_path / "prof").glob("device_*/info.json")).read_text())
    assert list(info["models"]) == ["1"]


def test_train_and_evaluate(tmp_path) -> None:
    estimator = NPUEstimator(model_fn=mlp_model_fn, config=run_config(tmp_path))
    tf.estimator.train_and_evaluate(
        estimator,
        tf.estimator.TrainSpec(input_fn=input_fn(), max_steps=8),
        tf.estimator.EvalSpec(input_fn=input_fn(), steps=2, throttle_secs=0),
    )
    _, rows = step_trace_rows(tmp_path / "prof")
    assert [r["Iteration ID"] for r in rows] == [str(i) for i in range(1, 9)]
    assert_step_trace_formulas(rows)
