"""TensorFlow 2 training gets the step trace: each style of tests/scripts/tf2_train.py, unmodified, profiled by env vars.

Each style runs profiled in a fresh process, and plain (every style in one process
for the whole test run: conftest.tf2_plain_runs): the trained weights must be bit-identical, and the step trace must hold one row per optimizer step
(evaluation, prediction and validation never count), every formula of REFERENCE
§4, and the columns the style's graph has the points for.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.once import InBackground
from tests.helpers.trace_files import assert_step_trace_formulas, only_prof_dir, step_trace_rows

SCRIPT = Path(__file__).parent / "scripts" / "tf2_train.py"
STEPS = 12


def _env(output: Path | None, options: dict | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PROFILING_")}
    if output is not None:
        env.update(PROFILING_MODE="true", PROFILING_OPTIONS=json.dumps(options or {"output": str(output), "training_trace": "on"}))
    return env


def train(style: str, output: Path | None, *extra: str, options: dict | None = None) -> tuple[dict, subprocess.CompletedProcess]:
    done = subprocess.run([sys.executable, str(SCRIPT), style, str(STEPS), *extra], env=_env(output, options),
                          capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1]), done


def train_with_plain(style: str, output: Path, plain_runs: InBackground, options: dict | None = None) -> tuple[dict, subprocess.CompletedProcess, dict]:
    """The profiled run, and the plain run's result from the session's `tf2_plain_runs`: (profiled result, its process, plain result)."""
    profiled, done = train(style, output, options=options)
    return profiled, done, plain_runs[style]


def _tensorflow_version() -> tuple[int, int]:
    import tensorflow as tf

    major, minor = tf.__version__.split(".")[:2]
    return int(major), int(minor)


def info_of(output: Path) -> dict:
    return json.loads(next(only_prof_dir(output).glob("device_*/info.json")).read_text())


def rows_by_model(rows: list[dict[str, str]]) -> dict[str, list[dict[str, str]]]:
    out: dict[str, list[dict[str, str]]] = {}
    for row in rows:
        out.setdefault(row["Model ID"], []).append(row)
    return out


# style -> (models, rows per model, reduce pairs)
STYLES = {
    "loop": (1, STEPS, 0),
    "loop_outer": (1, STEPS, 0),  # the loop's own function has no updates: the called step is the iteration
    "fit": (1, STEPS, 0),  # 2 epochs of STEPS // 2, with validation, evaluate and predict: not iterations
    "fit_spe": (1, STEPS, 0),  # steps_per_execution 3: one row per step, from the loop's body
    "retrace": (1, STEPS, 0),  # two traces of one function: one model, one sequence
    "gan": (2, STEPS, 0),  # two train functions: two Model IDs
    "mirrored": (1, STEPS, 2),  # MirroredStrategy on two CPUs: the all-reduces in the Reduce columns
    "for_dataset": (2, STEPS, 0),  # `for x, y in dataset`: a step given the batch, and one given none
}
# Steps given their batch as an argument: GetNext is the eager reads before each call (host_reads), from
# the second row on (with the env vars, reads are timed from the first traced step: the first batch is read before).
HOST_READ_STEPS = {"retrace": "step_on", "for_dataset": "batch_step"}
PLAIN_STYLES = [*STYLES, "jit"]  # the styles conftest.tf2_plain_runs runs plain


def _getnext_rows(style: str, function: str, rows: list[dict[str, str]]) -> list[bool]:
    """Which rows must have a GetNext time, for `function`'s model in `style`."""
    if HOST_READ_STEPS.get(style) == function.rsplit(".", 1)[-1]:
        return [False] + [True] * (len(rows) - 1)
    # The generator and the head step read no data. Keras 3's fit reads the batch in the function that calls
    # the step, and that caller's read is given to the step's row (`callers`); with steps_per_execution 3 the
    # loop reads each next batch in a cond branch, probed as a reader of its own: every step gets its read.
    no_read = style in ("gan", "retrace", "for_dataset")
    return [not no_read or (style == "gan" and function.endswith("discriminator_step"))] * len(rows)


# Keras fit runs with the host switches on too: the same rows and weights, and each switch's files.
HOST_SWITCHES = {"with_stack": True, "gc_detect_threshold": 0, "host_sys": "cpu,mem", "profile_memory": True, "mstx": "on"}
SWITCHED_STYLE = "fit"


@pytest.mark.parametrize("style", sorted(STYLES))
def test_each_style_is_traced_row_per_step_and_bit_identical(tmp_path: Path, style: str, tf2_plain_runs: InBackground) -> None:
    models, per_model, reduce_pairs = STYLES[style]
    switches = HOST_SWITCHES if style == SWITCHED_STYLE else {}
    options = {"output": str(tmp_path), "training_trace": "on", **switches}
    profiled, _, plain = train_with_plain(style, tmp_path, tf2_plain_runs, options=options)
    assert profiled["weights"] == plain["weights"] and profiled["loss"] == plain["loss"]
    header, rows = step_trace_rows(tmp_path)
    grouped = rows_by_model(rows)
    assert len(grouped) == models
    info = info_of(tmp_path)
    for model_id, model_rows in grouped.items():
        ids = [int(r["Iteration ID"]) for r in model_rows]
        # A tf.range loop runs its iterations' calls in parallel where their data allow: two steps' rows may
        # take their run numbers in the other order (docs/tf2.md, the style table). Every step is there once.
        # Keras 2's steps_per_execution loop is such a loop too (fit_spe: run numbers out of order, e.g. 2, 1, 3, in 2 runs of that style
        # of 22 on 2026-12-03, one a fresh-clone suite run, with its probes in loops wired as before that day).
        assert (sorted(ids) if style in ("loop_outer", "fit_spe") else ids) == list(range(1, per_model + 1))
        function = info["models"][model_id]["function"]
        has_getnext = [r["GetNext Time(us)"] != "N/A" for r in model_rows]
        expected = _getnext_rows(style, function, model_rows)
        assert has_getnext == expected, function
        starts = [r["GetNext Start(us)"] for r in model_rows if r["GetNext Start(us)"] != "N/A"]
        assert len(starts) == len(set(starts))  # a read is never given to two steps
    if style == "for_dataset":  # each batch's read is after the previous iteration's last step (the head's) ended
        batch, head = (grouped[k] for k in sorted(grouped, key=lambda k: info["models"][k]["function"]))
        for row, before in zip(batch[1:], head):
            assert int(before["Iteration End(us)"]) <= int(row["GetNext Start(us)"]) <= int(row["GetNext End(us)"]) <= int(row["FP Start(us)"])
    assert header.count("Reduce Start(us)") == reduce_pairs
    if style == "loop_outer" and _tensorflow_version() >= (2, 16):
        # TensorFlow 2.16+ inlines the called step into the loop's body, and the loop runs the next
        # step's reads while the previous one ends: rows may overlap (docs/tf2.md, the style table).
        # Each row still holds its own step's points in order.
        for row in rows:
            fp, bp, end = (int(row[k]) for k in ("FP Start(us)", "BP End(us)", "Iteration End(us)"))
            assert fp < bp <= end and int(row["FP to BP Time(us)"]) == bp - fp and int(row["Iteration Refresh(us)"]) == end - bp
    else:
        assert_step_trace_formulas(rows, one_data_input=style != "mirrored")  # each replica reads its own batch
    assert info["source"] == "env" and len(info["models"]) == models
    # Backprop's last gradient, or (all-reduces) the pack the last all-reduce reads.
    assert all(model["bp"].startswith("gradient_tape/") or "concat" in model["bp"] for model in info["models"].values())
    if switches:  # every GC pause (threshold 0) and the stacks, the host usage, the peaks per step, one timeline
        report = only_prof_dir(tmp_path) / "mindstudio_profiler_output"
        for pattern in ("host_stacks_*.folded", "gc_pauses_*.csv", "host_cpu_usage_*.csv", "host_mem_usage_*.csv",
                        "step_memory_*.csv", "host_trace_*.json"):
            assert len(list(report.glob(pattern))) == 1, pattern
        (memory,) = report.glob("step_memory_*.csv")
        assert len(memory.read_text().splitlines()) == 1 + per_model


def test_the_python_entry_takes_precedence_over_the_env_vars(tmp_path: Path) -> None:
    ignored = tmp_path / "env_output"
    _, done = train("loop", tmp_path / "unused", "--api", str(tmp_path / "api"), options={"output": str(ignored), "training_trace": "on"})
    assert "PROFILING_MODE=true and PROFILING_OPTIONS ignored: start_tf2_profiling's profiling_options take precedence" in done.stderr
    assert not ignored.exists()
    _, rows = step_trace_rows(tmp_path / "api")
    assert len(rows) == STEPS
    info = info_of(tmp_path / "api")
    assert info["source"] == "start_tf2_profiling" and "env_ignored" in info


def test_jit_compiled_steps_are_timed_around_the_call_with_fp_bp_not_available(tmp_path: Path, tf2_plain_runs: InBackground) -> None:
    profiled, done, plain = train_with_plain("jit", tmp_path, tf2_plain_runs)
    assert profiled["weights"] == plain["weights"]
    assert done.stderr.count("is compiled with XLA (jit_compile=True): no stamp op has an XLA kernel") == 1
    assert "tf2_train.py" in done.stderr.split("is compiled with XLA")[0].splitlines()[-1]  # shown at the script's line
    info = info_of(tmp_path)
    assert any("compiled with XLA" in note for note in info["notes"])
    (model,) = info["models"].values()  # the caller around the compiled step (Keras' train_function), not the step
    assert model["fp"] is None and model["bp"] is None and model["get_next"] == ["IteratorGetNext"]
    assert model["reasons"][0].startswith("fp, bp = N/A: the updates are in an XLA-compiled function")
    _, rows = step_trace_rows(tmp_path)
    assert [int(r["Iteration ID"]) for r in rows] == list(range(1, STEPS + 1))  # fit's steps, not its evaluation
    for row, previous in zip(rows[1:], rows):
        assert row["FP Start(us)"] == row["BP End(us)"] == row["FP to BP Time(us)"] == "N/A"
        assert int(row["Iteration Time(us)"]) == int(row["Iteration End(us)"]) - int(previous["Iteration End(us)"])
        assert int(previous["Iteration End(us)"]) <= int(row["GetNext Start(us)"]) <= int(row["GetNext End(us)"]) <= int(row["Iteration End(us)"])
        assert int(row["GetNext Time(us)"]) == int(row["GetNext End(us)"]) - int(row["GetNext Start(us)"])


def test_bad_options_stop_before_the_first_step(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, str(SCRIPT), "fit", str(STEPS)],
                          env=_env(tmp_path, {"output": str(tmp_path), "training_trace": "yes"}), capture_output=True, text=True, timeout=240)
    assert done.returncode != 0
    assert "PROFILING_OPTIONS: option 'training_trace': invalid value 'yes'" in done.stderr
    assert not list(tmp_path.glob("PROF_*"))


def test_a_foreign_fp_point_falls_back_with_its_note(tmp_path: Path) -> None:
    _, done = train("loop", tmp_path, options={"output": str(tmp_path), "training_trace": "on",
                                                "fp_point": "While_body_while_body_44418_1223/bert/embeddings/MatMul"})
    assert "is not an op in this graph" in done.stderr and "training goes on with the automatic fp_point" in done.stderr
    _, rows = step_trace_rows(tmp_path)
    assert len(rows) == STEPS and all(r["FP Start(us)"] != "N/A" for r in rows)
    model = next(iter(info_of(tmp_path)["models"].values()))
    assert model["trace_points_fallback"]["fp_point"]["asked"].startswith("While_body_")


SAVE_AND_TRAIN = """
import os, sys
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "2"
import numpy as np, tensorflow as tf
model = tf.keras.Sequential([tf.keras.Input((8,)), tf.keras.layers.Dense(4), tf.keras.layers.Dense(1)])
optimizer = tf.keras.optimizers.SGD(0.01)
module = tf.Module()
module.model, module.optimizer = model, optimizer
@tf.function(input_signature=[tf.TensorSpec([16, 8]), tf.TensorSpec([16, 1])])
def train_step(x, y):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean((model(x) - y) ** 2)
    optimizer.apply_gradients(zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables))
    return loss
module.train_step = train_step
x, y = np.ones((16, 8), np.float32), np.ones((16, 1), np.float32)
for _ in range(3):
    train_step(x, y)
tf.saved_model.save(module, sys.argv[1])
model.save(sys.argv[2] + (".keras" if int(tf.__version__.split(".")[1]) >= 16 else ""))
"""

LOAD_WITHOUT_THE_PACKAGE = """
import os, sys
sys.modules["npu_tf_profiling"] = None  # importing it would fail: the package is not there
os.environ["TF_CPP_MIN_LOG_LEVEL"] = "2"
import numpy as np, tensorflow as tf
loaded = tf.saved_model.load(sys.argv[1])
x, y = np.ones((16, 8), np.float32), np.ones((16, 1), np.float32)
losses = [float(loaded.train_step(x, y)) for _ in range(3)]
assert losses[0] > losses[-1], losses
keras_model = tf.keras.models.load_model(sys.argv[2] + (".keras" if int(tf.__version__.split(".")[1]) >= 16 else ""))
print(keras_model.predict(x, verbose=0).shape, losses)
"""


def test_a_model_saved_from_a_profiled_run_loads_and_trains_without_the_package(tmp_path: Path) -> None:
    saved, keras_saved = tmp_path / "module", tmp_path / "keras_model"
    made = subprocess.run([sys.executable, "-c", SAVE_AND_TRAIN, str(saved), str(keras_saved)], env=_env(tmp_path / "out"),
                          capture_output=True, text=True, timeout=240)
    assert made.returncode == 0, made.stderr
    assert len(step_trace_rows(tmp_path / "out")[1]) == 3  # the saved train_step is the probed one
    loaded = subprocess.run([sys.executable, "-c", LOAD_WITHOUT_THE_PACKAGE, str(saved), str(keras_saved)], env=_env(None),
                            capture_output=True, text=True, timeout=240)
    assert loaded.returncode == 0, loaded.stderr
    assert loaded.stdout.startswith("(16, 1)")
