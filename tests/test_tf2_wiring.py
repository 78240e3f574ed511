"""How the probes sit in a real Keras step's graph: structure that speed depends on, checked without timing it.

Keras passes every gradient of a step through one IdentityN on its way to the
updates. Grappler removes such forwarding ops, unless one has a control input:
when the BP stamp gated that IdentityN, every update waited for the last gradient,
and Keras fit's MLP step took +15% (benchmarks/RESULTS.md). The BP stamp must gate
the last gradient's own update ops instead. Each case is a fresh process tracing a
custom step (the install tests' own) and Keras fit's step under `start_tf2_profiling`, printing the wiring.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.test_tf2_install import TRAIN

SETUP = """
import json, sys
import tensorflow as tf
import npu_tf_profiling
npu_tf_profiling.start_tf2_profiling({"output": sys.argv[1], "training_trace": "on"})
"""
FIT = """
tf.keras.utils.set_random_seed(0)
model = tf.keras.Sequential([tf.keras.Input((8,))] + [tf.keras.layers.Dense(8, activation="relu") for _ in range(3)]
                            + [tf.keras.layers.Dense(1)])
model.compile(optimizer=tf.keras.optimizers.Adam(1e-3), loss="mse")
function = model.make_train_function()
iterator = iter(tf.data.Dataset.from_tensor_slices((tf.ones((64, 8)), tf.zeros((64, 1)))).repeat().batch(16))
function(iterator)
graph = function.get_concrete_function(iterator).graph
"""
CUSTOM_STEP = TRAIN.format(steps=1) + "graph = train_step.get_concrete_function().graph\n"
INSPECT = """
own = "npu_tf_profiling"
ops = [op for op in graph.get_operations() if own not in op.name]
bp_end = [op for op in graph.get_operations() if op.type == "Timestamp" and op.name.endswith("bp_end")]
print(json.dumps({
    # (the function's output Identity waits on the row's write: it is the iteration end, never removed)
    "forwarding_gated": [op.name for op in ops if op.type in ("Identity", "IdentityN")
                         and any(c.type == "Timestamp" for c in op.control_inputs)],
    "bp_gates": [[c.name, c.type] for s in bp_end for c in s._control_outputs if own not in c.name],
}))
"""


@pytest.mark.parametrize("style", ["custom_step", "fit"])
def test_the_bp_stamp_gates_the_last_gradients_update_not_keras_identity_of_all_gradients(tmp_path: Path, style: str) -> None:
    code = SETUP + (FIT if style == "fit" else CUSTOM_STEP) + INSPECT
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path)], capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    wiring = json.loads(done.stdout.strip().splitlines()[-1])
    assert wiring["forwarding_gated"] == [], "a forwarding op Grappler would remove waits on a stamp"
    gates = wiring["bp_gates"]
    assert gates, "the BP stamp gates nothing: it may wait behind the last gradient's update"
    # The first layer's kernel is the last gradient: only its update's few ops wait.
    assert all(kind not in ("Identity", "IdentityN") for _, kind in gates), gates
    assert len(gates) <= 4, gates
