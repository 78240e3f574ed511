"""GAN-shaped TensorFlow 2 steps (several tapes and optimizers in one step) get a row per step, with the right points.

Each style of tests/scripts/tf2_gan.py runs unmodified under the env vars, with a task
window, and plain (every style in one process: tests/scripts/plain_runs.py): the weights are bit-identical; there is one row
per step, FP < BP <= Iteration End; the iteration end is one of the function's outputs
(a function prunes what they do not depend on: a GAN's dead-end gradients never run);
BP End waits on every tape's gradients; and BP End is no earlier than the end of the
step's last gradient kernel in the same run's task trace.

The last check needs the task trace on the step trace's clock: the probe kernels in the
trace place it to a few µs (reports.task.xspace), so it holds within TASK_CLOCK_US.

A step whose points never fire (a fault injected into discovery: the iteration end a
pruned dead-end gradient, as before the fix) is said so, at once and at exit, naming the
function and the op that never ran, and gets rows timed at its calls' ends.
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.once import InBackground
from tests.test_tf2_step_trace import _env, info_of, rows_by_model
from tests.test_tf2_tasks import task_rows
from tests.helpers.trace_files import step_trace_rows

SCRIPT = Path(__file__).parent / "scripts" / "tf2_gan.py"
STEPS = 6
WINDOW = (3, 5)
# The bound for a stamp against TensorFlow's own kernel times, once both are on one clock.
TASK_CLOCK_US = 20.0


def is_gradient(op_name: str) -> bool:
    """A gradient kernel: of a tape, or inside a backward function call (`PartitionedCall_1/gradients/...`)."""
    return "gradient_tape/" in op_name or "/gradients/" in op_name


STYLES = ["wgan_gp", "dcgan", "two_tapes", "function_layers"]


@pytest.fixture(scope="module")
def plain_runs() -> InBackground:
    """style -> the plain run's result, made beside the first test's own run (--forget-what-runs changes only
    profiling: wgan_gp's serves it too)."""
    def make() -> dict[str, dict]:
        done = subprocess.run([sys.executable, str(SCRIPT.with_name("plain_runs.py")), str(SCRIPT), str(STEPS), *STYLES],
                              env=_env(None), capture_output=True, text=True, timeout=240)
        assert done.returncode == 0, done.stderr
        return {result["style"]: result for result in map(json.loads, (line for line in done.stdout.splitlines() if line.startswith("{")))}

    return InBackground(make)


def run_gan(style: str, tmp_path: Path, options: dict, *extra: str) -> tuple[dict, str]:
    """(profiled result, its stderr) of one style."""
    done = subprocess.run([sys.executable, str(SCRIPT), style, str(STEPS), *extra], env=_env(tmp_path, options),
                          capture_output=True, text=True, timeout=240)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1]), done.stderr


@pytest.mark.parametrize("style", STYLES)
def test_a_gan_step_gets_a_row_per_step_with_bp_after_its_last_gradient(tmp_path: Path, style: str, plain_runs: InBackground) -> None:
    options = {"output": str(tmp_path), "training_trace": "on", "task_trace": "on",
               "start_step": WINDOW[0], "stop_step": WINDOW[1]}
    profiled, _ = run_gan(style, tmp_path, options)
    assert profiled["weights"] == plain_runs[style]["weights"]
    _, rows = step_trace_rows(tmp_path)
    (model_id, model_rows), = rows_by_model(rows).items()
    assert [int(r["Iteration ID"]) for r in model_rows] == list(range(1, STEPS + 1))
    for row in model_rows:
        fp, bp, end = (float(row[k]) for k in ("FP Start(us)", "BP End(us)", "Iteration End(us)"))
        assert fp < bp <= end, row
    (model,) = info_of(tmp_path)["models"].values()
    assert model["iteration_end"].startswith("Identity"), model["reasons"]  # a function output: it always runs
    assert "of the ops every call runs" in model["reasons"][0]
    # The generator's forward pass comes first (op names differ between Keras 2 and 3: the reason says which pass).
    # Not yet where the layers are function calls: their weights reach the call as resource handles, which
    # rule 6 does not count as weight reads, so FP is the critic's call on the batch (docs/npu_device_surface.md).
    (fp_reason,) = [r for r in model["reasons"] if r.startswith("fp = ")]
    if style != "function_layers":
        assert f"fp = {model['fp']}: the first op reading a weight in the forward pass fed by the random" in fp_reason
    bp_end = {int(r["Iteration ID"]): float(r["BP End(us)"]) for r in model_rows}
    tasks = [t for t in task_rows(tmp_path) if t["Model ID"] == model_id]
    for iteration in range(WINDOW[0], WINDOW[1] + 1):
        gradient_ends = [float(t["Task Start(us)"]) + float(t["Task Duration(us)"]) for t in tasks
                         if int(t["Iteration ID"]) == iteration and is_gradient(t["Op Name"])]
        assert gradient_ends, iteration
        assert bp_end[iteration] >= max(gradient_ends) - TASK_CLOCK_US, (iteration, bp_end[iteration] - max(gradient_ends))


def test_a_step_whose_points_never_fire_is_said_so_and_gets_rows_at_its_calls(tmp_path: Path, plain_runs: InBackground) -> None:
    options = {"output": str(tmp_path), "training_trace": "on"}
    profiled, stderr = run_gan("wgan_gp", tmp_path, options, "--forget-what-runs")
    assert profiled["weights"] == plain_runs["wgan_gp"]["weights"]
    (model,) = info_of(tmp_path)["models"].values()
    dead_end = model["iteration_end"]
    assert "gradient_tape/" in dead_end  # the fault: a gradient nothing reads, which TensorFlow prunes
    said = [line for line in stderr.splitlines() if "wrote no step-trace row" in line]
    # Named for the function the step is (Keras 2: train_function; Keras 3: one_step_on_data, which fit calls in a caller).
    step_function = "one_step_on_data" if "one_step_on_data" in model["function"] else "train_function"
    assert len(said) == 2 and "at exit" in said[1] and all(dead_end in line and step_function in line for line in said), stderr
    assert model["rows_timed_at_calls"] in info_of(tmp_path)["notes"]
    _, rows = step_trace_rows(tmp_path)
    # The env vars' request is read at the first call's trace, inside that call: the calls after it are timed.
    assert [int(r["Iteration ID"]) for r in rows] == list(range(2, STEPS + 1))
    assert all(r["FP Start(us)"] == r["BP End(us)"] == "N/A" for r in rows)
    ends = [float(r["Iteration End(us)"]) for r in rows]
    assert [float(r["Iteration Time(us)"]) for r in rows[1:]] == [b - a for a, b in zip(ends, ends[1:])]
