"""How the probes sit in a real Keras step's graph: structure that speed depends on, checked without timing it.

Keras passes every gradient of a step through one IdentityN on its way to the
updates. Grappler removes such forwarding ops, unless one has a control input:
when the BP stamp gated that IdentityN, every update waited for the last gradient,
and Keras fit's MLP step took +15% (benchmarks/history/2026-12-03-tf2-bp-identityn.md). The BP stamp must gate
the last gradient's own update ops instead. GetNext's stamps: a no-op Assert on the
batch (what a Session's graph gets, so that a run feeding the batch prunes GetNext) cost
the loop MLP 3-4% a step, so a function's stamp waits on GetNext by a control edge. GetNext's
start stamp waits on nothing (a root op): made to wait on the iterator's argument instead, it
started GetNext 135-165 µs later after the call (two ad hoc runs), and in one run of 12 functions
a variant the loop MLP step cost +5.6% against +0.3% (benchmarks/history/2026-12-04-tf2-getnext-root-op-mlps.md).
Each case is a fresh process tracing a custom step (the install tests' own) and Keras
fit's step under `start_tf2_profiling`, printing the wiring.
"""
from __future__ import annotations

import json
import subprocess
import sys
from importlib.metadata import version

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
definition = graph.as_graph_def()
bodies = [definition.node] + [f.node_def for f in definition.library.function]  # and the functions it calls
forwarding_gated, bp_gates, own_asserts, get_next_start_inputs = [], [], [], None
for nodes in bodies:
    kinds = {n.name: n.op for n in nodes}
    for n in nodes:
        waits = [i[1:] for i in n.input if i.startswith("^")]
        if own in n.name:
            own_asserts += [n.name] if n.op == "Assert" else []
            if n.name.endswith("get_next_start"):
                get_next_start_inputs = [kinds.get(i.lstrip("^").split(":")[0]) for i in n.input]
            continue
        # (the function's output Identity waits on the row's write: it is the iteration end, never removed)
        if n.op in ("Identity", "IdentityN") and any(kinds.get(w) == "Timestamp" for w in waits):
            forwarding_gated.append(n.name)
        if any(kinds.get(w) == "Timestamp" and w.endswith("bp_end") for w in waits):
            bp_gates.append([n.name, n.op])
print(json.dumps({"forwarding_gated": forwarding_gated, "bp_gates": bp_gates, "own_asserts": own_asserts,
                  "get_next_start_inputs": get_next_start_inputs}))
"""


@pytest.fixture(scope="module", params=["custom_step", "fit"])
def wiring(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> dict:
    """The probes' wiring in one style's traced step (one process a style, shared by the tests)."""
    if request.param == "fit" and int(version("keras").split(".")[0]) >= 3:
        pytest.skip("Keras 3's train function is no tf.function whose graph a script can get; its custom step is checked")
    code = SETUP + (FIT if request.param == "fit" else CUSTOM_STEP) + INSPECT
    done = subprocess.run([sys.executable, "-c", code, str(tmp_path_factory.mktemp(request.param))],
                          capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_the_bp_stamp_gates_the_last_gradients_update_not_keras_identity_of_all_gradients(wiring: dict) -> None:
    assert wiring["forwarding_gated"] == [], "a forwarding op Grappler would remove waits on a stamp"
    gates = wiring["bp_gates"]
    assert gates, "the BP stamp gates nothing: it may wait behind the last gradient's update"
    # The first layer's kernel is the last gradient: only its update's few ops wait.
    assert all(kind not in ("Identity", "IdentityN") for _, kind in gates), gates
    assert len(gates) <= 4, gates


def test_get_next_is_waited_on_by_control_edges_and_its_start_stamp_is_a_root_op(wiring: dict) -> None:
    assert wiring["own_asserts"] == [], "a stamp waits on the batch through an Assert (a Session's gate)"
    # Not on the iterator (an argument: a placeholder in the traced graph), nor on anything else.
    assert wiring["get_next_start_inputs"] == [], wiring["get_next_start_inputs"]
