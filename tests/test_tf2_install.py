"""Installing the TensorFlow 2 hook: whatever the import order, and on a TensorFlow it was not checked with.

Each case is a fresh process (the hook goes in once, when TensorFlow loads) training
a tiny custom `tf.function` step. The unchecked-version and missing-hook cases set
the package's own constants (`CHECKED_VERSIONS`, `TRANSFORM_MODULE`) before TensorFlow
loads: TensorFlow itself is the real one.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.trace_files import step_trace_rows

STEPS = 5

TRAIN = """
import sys
import tensorflow as tf
tf.keras.utils.set_random_seed(0)
model = tf.keras.Sequential([tf.keras.Input((4,)), tf.keras.layers.Dense(3, activation="relu"), tf.keras.layers.Dense(1)])
optimizer = tf.keras.optimizers.SGD(0.1)
iterator = iter(tf.data.Dataset.from_tensor_slices((tf.ones((64, 4)), tf.zeros((64, 1)))).repeat().batch(8))

@tf.function
def train_step():
    x, y = next(iterator)
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(model(x, training=True) - y))
    optimizer.apply_gradients(zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables))
    return loss

for _ in range({steps}):
    train_step()
print("weights", float(tf.reduce_sum([tf.reduce_sum(v) for v in model.trainable_variables])))
"""


def _run(code: str, env: dict[str, str]) -> subprocess.CompletedProcess:
    # A deadlock at import would hang here: the timeout turns it into a failure, not a stuck suite.
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PROFILING_")}
    env.update(extra)
    return env


def test_start_tf2_profiling_before_tensorflow_is_imported(tmp_path: Path) -> None:
    """The entry called first, TensorFlow imported after: the import installs the hook, the steps are traced."""
    options = json.dumps({"output": str(tmp_path), "training_trace": "on"})
    code = f"import npu_tf_profiling\nnpu_tf_profiling.start_tf2_profiling({options!r})\n" + TRAIN.format(steps=STEPS)
    done = _run(code, _env())
    assert done.returncode == 0, done.stderr
    _, rows = step_trace_rows(tmp_path)
    assert [int(r["Iteration ID"]) for r in rows] == list(range(1, STEPS + 1))


@pytest.fixture(scope="module")
def plain() -> subprocess.CompletedProcess:
    """The unprofiled run both cases compare with: the same code and environment, so one run serves both."""
    return _run(TRAIN.format(steps=STEPS), _env())


@pytest.mark.parametrize("constant, value, reason", [
    ("CHECKED_VERSIONS", "((2, 99),)", "is not one this package was checked with (2.15 to 2.21)"),
    ("TRANSFORM_MODULE", "'tensorflow.python.eager.no_such_transform_module'", "graph-transform hook"),
])
def test_an_unchecked_tensorflow_or_a_missing_hook_gives_one_warning_and_trains_unprofiled(
        tmp_path: Path, constant: str, value: str, reason: str, plain: subprocess.CompletedProcess) -> None:
    out = tmp_path / "out"
    code = f"import npu_tf_profiling.runtime.functions.attach as attach\nattach.{constant} = {value}\n" + TRAIN.format(steps=STEPS)
    profiled = _run(code, _env(PROFILING_MODE="true", PROFILING_OPTIONS=json.dumps({"output": str(out), "training_trace": "on"})))
    assert profiled.returncode == 0 and plain.returncode == 0, profiled.stderr + plain.stderr
    warnings = [line for line in profiled.stderr.splitlines() if "TensorFlow 2 steps are not traced" in line]
    assert len(warnings) == 1 and reason in warnings[0], profiled.stderr
    assert profiled.stdout.splitlines()[-1] == plain.stdout.splitlines()[-1]  # the job trains as it would
    assert not list(out.glob("PROF_*")), "a hook that was not installed made a PROF folder"
