"""The end of a TensorFlow 2 step that returns nothing, and the self-check that would catch an early one (issue 46).

TensorFlow's DCGAN tutorial steps with two tapes and two optimizers and returns nothing, so no output
waits on its updates. tests/scripts/tf2_gan.py's `no_return` is that shape, and `keras_no_return` a Keras
`train_step` override returning an empty dict; `nested_no_return` a step reading the batch and calling an
inner `tf.function` doing both updates (the caller returns nothing either), and `strategy_no_return` the
step as `strategy.run` under a one-device MirroredStrategy. Against the same run's task trace (on the step trace's
clock to a few µs, tests/test_tf2_gan.py): no gradient kernel ends after BP End, and Iteration End is no
earlier than the last optimizer update's kernel. Against the host: the self-check found each call's
return within its bound of the row's end (runtime/end_check.py). The step returning its losses
(`two_tapes`) is tests/test_tf2_gan.py's. The nested and strategy shapes train the very weights `no_return`
does (the same ops and seeds: equal unprofiled, checked once by hand), so `no_return`'s plain twin is theirs too.

The self-check's warning: the fault `--end-early` gives discovery back its old choice (a sink running a
few updates, nothing more), and `--slow-tail` ends the step with a 20 ms side effect, four times the
bound: the job must say so once while it runs, and info.json and the summary's notes must hold it.
All runs go side by side in one module fixture (two cores: the CPU time is what the suite pays).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from npu_tf_profiling.raw_format.run_info import RunInfo
from npu_tf_profiling.raw_format.layout import K_ITERATION_END_CHECK
from npu_tf_profiling.reports.step.point_notes import point_notes
from npu_tf_profiling.runtime import end_check
from tests.helpers.side_by_side import Command, run_side_by_side
from tests.helpers.trace_files import step_trace_rows
from tests.test_tf2_gan import SCRIPT, TASK_CLOCK_US, is_gradient
from tests.test_tf2_step_trace import _env, info_of, rows_by_model
from tests.test_tf2_tasks import task_rows

# The end's self-check holds each call's return within end_check.BOUND_US of its row's end, a time bound a second
# busy process breaks: the MirroredStrategy step's p10 return gap is 0.9 ms alone (`pytest -s -k strategy` here), and was 7.2 ms (median 13.7) in a
# fresh-clone suite's parallel phase, which read as an early end (2026-12-07). So the file runs in the timing phase.
pytestmark = pytest.mark.timing

STEPS = 24  # the self-check's sample is calls 3..22
WINDOW = (3, 5)
UPDATE_TYPES = frozenset({"AssignAddVariableOp", "AssignSubVariableOp", "AssignVariableOp", "ResourceApplyAdam"})
# name -> (style, extra arguments, profiled)
RUNS = {
    "no_return": ("no_return", (), True),
    "no_return plain": ("no_return", (), False),
    "keras_no_return": ("keras_no_return", (), True),
    "nested_no_return": ("nested_no_return", (), True),
    "strategy_no_return": ("strategy_no_return", (), True),
    "early": ("no_return", ("--end-early", "--slow-tail"), True),
}


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[dict, str, Path]]:
    """name -> (the printed result, stderr, output folder) of every run in RUNS, all run at once."""
    outputs = {name: tmp_path_factory.mktemp(name.replace(" ", "_")) for name in RUNS}
    commands = []
    for name, (style, extra, profiled) in RUNS.items():
        out = outputs[name]
        options = {"output": str(out), "training_trace": "on", "task_trace": "on", "start_step": WINDOW[0], "stop_step": WINDOW[1]}
        commands.append(Command([sys.executable, str(SCRIPT), style, str(STEPS), *extra],
                                _env(out if profiled else None, options if profiled else None)))
    found = {}
    for name, done in zip(RUNS, run_side_by_side(commands, timeout=400)):
        assert done.returncode == 0, (name, done.stderr[-3000:])
        found[name] = (json.loads(done.stdout.splitlines()[-1]), done.stderr, outputs[name])
    return found


PLAIN_TWIN = {"no_return": "no_return plain", "nested_no_return": "no_return plain", "strategy_no_return": "no_return plain"}


@pytest.mark.parametrize("style", ["no_return", "keras_no_return", "nested_no_return", "strategy_no_return"])
def test_a_step_returning_nothing_ends_after_all_it_runs(runs: dict, style: str) -> None:
    result, _, out = runs[style]
    if style in PLAIN_TWIN:  # keras_no_return: one plain twin is enough for the change the styles share (the CPU the suite pays)
        assert result["weights"] == runs[PLAIN_TWIN[style]][0]["weights"]
    (model,) = info_of(out)["models"].values()
    assert model["iteration_end_also"] and "nothing the function returns waits on all it runs" in model["reasons"][0]
    _, rows = step_trace_rows(out)
    (model_id, model_rows), = rows_by_model(rows).items()
    ids = [int(r["Iteration ID"]) for r in model_rows]
    assert ids == list(range(1, len(ids) + 1)) and len(ids) >= WINDOW[1]  # rows end with the task window, or a little after
    if style == "nested_no_return":  # the outer step reads the batch, returns nothing, and still gives it to the inner's rows
        assert "the read of train_step" in model["get_next_from"], model["get_next_from"]
        assert all(r["GetNext Start(us)"] != "N/A" for r in model_rows), [r["GetNext Start(us)"] for r in model_rows]
    by_iteration = {int(r["Iteration ID"]): r for r in model_rows}
    tasks = [t for t in task_rows(out) if t["Model ID"] == model_id]
    for iteration in range(WINDOW[0], WINDOW[1] + 1):
        ends = [(t, float(t["Task Start(us)"]) + float(t["Task Duration(us)"])) for t in tasks if int(t["Iteration ID"]) == iteration]
        gradients = [end for t, end in ends if is_gradient(t["Op Name"])]
        updates = [end for t, end in ends if t["Op Type"] in UPDATE_TYPES]
        assert gradients and len(updates) >= 16, iteration  # every update of both optimizers is in the window
        row = by_iteration[iteration]
        assert float(row["BP End(us)"]) >= max(gradients) - TASK_CLOCK_US, (iteration, max(gradients) - float(row["BP End(us)"]))
        assert float(row["Iteration End(us)"]) >= max(updates) - TASK_CLOCK_US, (iteration, max(updates) - float(row["Iteration End(us)"]))
    check = model[K_ITERATION_END_CHECK]
    print(style, "self-check:", check)
    assert check["checked"] and check["calls"] == end_check.SAMPLE_RUNS and not check["early"], check
    assert 0 < check["p10_return_after_end_us"] <= check["bound_us"], check


def test_an_early_iteration_end_is_said_once_with_its_figure(runs: dict) -> None:
    _, stderr, out = runs["early"]
    info = info_of(out)
    (model_id, model), = info["models"].items()
    check = model[K_ITERATION_END_CHECK]
    print("self-check:", check)
    # The 20 ms tail that the end does not wait on, less the call's return latency: 13.5 ms on a loaded fresh-clone
    # run (2026-12-06), so half the tail, which still tells the tail from a return latency (bound_us, 5 ms).
    assert check["early"] and check["p10_return_after_end_us"] >= 10_000, check
    assert model["iteration_end"] in check["note"] and "train_step" in check["note"]
    assert info["notes"].count(check["note"]) == 1
    assert stderr.count("of its calls returned") == 1, stderr[-3000:]
    assert check["note"] in point_notes(RunInfo.from_json(info), int(model_id), fp_measured=True, bp_measured=True)
