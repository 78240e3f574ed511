"""Data Aug Bound split by cause: input, the other runs the script made between iterations, and host time.

The split is computed from raw files (synthetic, exact) and then checked end to end on two
scripts: a GCN-style sess.run script that evaluates every 5 steps, whose summary must list the
evaluation gaps apart (the median gap holds none, so the sentence is not "mostly evaluation"), and a Keras fit whose validation pass must be attributed to
validation. Counts are exact (which runs fall in which gap is fixed by the script); times are
not asserted, only which cause dominates where the script makes it dominate by far.
"""
from __future__ import annotations

import json
import re
import os
import subprocess
import sys
from pathlib import Path

import pytest

from npu_tf_profiling.cli import main
from npu_tf_profiling.raw_format import layout
from npu_tf_profiling.raw_format.other_runs import encode_other_run
from npu_tf_profiling.reports.step.summary import summarize_prof_dir
from npu_tf_profiling.testing.step_synthetic import T0_US, StepPlan, write_step_prof_dir
from tests.helpers.trace_files import only_prof_dir

SCRIPTS = Path(__file__).parent / "scripts"
CONSOLE_SCRIPT = str(Path(sys.executable).parent / "npu-tf-prof")
PERIOD = 100.0 + 700.0 + 200.0  # StepPlan's data_aug + fp_bp + refresh, µs


def _with_other_runs(prof: Path, runs: list[tuple[float, float, str]]) -> None:
    device = layout.device_dir(prof, 0)
    (device / layout.INFO_FILE).write_text(json.dumps({"device_id": 0, layout.K_OTHER_RUNS_RECORDED: True}))
    with open(device / layout.DATA_DIR / layout.OTHER_RUNS_FILE, "wb") as out:
        for start, end, kind in runs:
            out.write(encode_other_run(start, end, kind, None))
        out.write(b'{"start_us": 1, "end_us"')  # a torn last line: skipped


def test_the_gap_is_split_into_input_other_runs_and_host_from_raw_files(tmp_path: Path) -> None:
    prof = write_step_prof_dir(tmp_path, StepPlan(iterations=10))
    old = summarize_prof_dir(prof).models[0]
    assert old.between is None and old.verdict  # an earlier version's folder: nothing split, verdict as before
    gap = lambda k: T0_US + PERIOD * k  # noqa: E731 - iteration k+1's Data Aug Bound starts at iteration k's end
    _with_other_runs(prof, [(gap(3) + 20, gap(3) + 50, "evaluation"), (gap(6) + 20, gap(6) + 50, "evaluation"),
                            (gap(6) + 30, gap(6) + 40, "summaries"),  # nested in the evaluation: counted once in time
                            (gap(8) + 20, gap(8) + 40, "input reads"),  # a sess.run of the input pipeline: input
                            (gap(4) + 300, gap(4) + 400, "evaluation")])  # inside FP to BP: not between iterations
    model = summarize_prof_dir(prof).models[0]
    total = 9 * PERIOD  # the 9 steady iterations
    assert model.between["other_runs"] == {"evaluation": {"count": 2, "time_us": 60.0},
                                           "summaries": {"count": 1, "time_us": 10.0},
                                           "input reads": {"count": 1, "time_us": 20.0}}
    assert model.between["other_share"] == pytest.approx(60.0 / total)
    assert model.between["input_share"] == pytest.approx((9 * 40.0 + 20.0) / total)
    assert model.between["host_share"] == pytest.approx((9 * 100.0 - 9 * 40.0 - 20.0 - 60.0) / total)
    assert model.input_share == pytest.approx(9 * 40.0 / total)  # GetNext measured: the verdict's input is GetNext
    out = tmp_path / "page.html"
    assert main(["view", str(prof), "-o", str(out)]) == 0
    assert ("input 4.2% (input reads 1 run(s), 20.0 us), other runs 0.7% (evaluation 2 run(s), 60.0 us, "
            "summaries 1 run(s), 10.0 us)") in out.read_text()


def test_without_input_timing_the_verdict_is_an_upper_bound(tmp_path: Path) -> None:
    """No GetNext timing (a feed_dict batch, made on the host): the host's time between iterations bounds input from
    above, so the verdict says "at most" (a GCN-style script's 20% host time read "highly input-bound" before)."""
    prof = write_step_prof_dir(tmp_path, StepPlan(iterations=10, get_next=float("nan")))
    _with_other_runs(prof, [(T0_US + PERIOD * 3 + 20, T0_US + PERIOD * 3 + 50, "evaluation")])
    model = summarize_prof_dir(prof).models[0]
    assert model.between["input_share"] is None
    assert model.input_share == pytest.approx((9 * 100.0 - 30.0) / (9 * PERIOD))
    assert model.verdict == "at most moderately input-bound", model.verdict
    assert "an upper bound" in model.input_measure


def _profiled(tmp_path: Path, command: list[str]) -> Path:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("PROFILING_")}
    environ.update(TF_CPP_MIN_LOG_LEVEL="2", PROFILING_MODE="true",
                   PROFILING_OPTIONS=json.dumps({"output": str(tmp_path / "prof"), "training_trace": "on"}))
    done = subprocess.run(command, cwd=tmp_path, env=environ, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-4000:]
    return only_prof_dir(tmp_path / "prof")


def test_evaluation_runs_every_5_steps_are_named_in_the_verdict_not_input(tmp_path: Path) -> None:
    prof = _profiled(tmp_path, [CONSOLE_SCRIPT, "run", "--tf1", str(SCRIPTS / "ascend_eval_every_n.py"),
                                "--steps", "20", "--eval_every", "5"])
    model = summarize_prof_dir(prof).models[0]
    assert model.between["other_runs"]["evaluation"]["count"] == 3  # after steps 5, 10, 15 (20's is after the last)
    # It feeds the same arrays every step (runtime.session.fed_arrays): no input is made between iterations.
    assert model.between["input_share"] is None and model.input_share == 0.0 and model.verdict == "not input-bound"
    assert model.between["other_share"] > model.between["host_share"]  # a 20,000-row evaluation against a 32-row step
    # 3 gaps of 19 hold an evaluation: the mean is mostly evaluation runs, the median gap is not (issue 46), so the
    # sentence says where the evaluations are: in long gaps, each listed with its iteration and cause.
    text = "\n".join(model.render_lines())
    assert "mostly evaluation runs" not in text and "the median gap" in text
    listed = {g["iteration"]: g["cause"] for g in model.between["long_gaps"]["listed"]}
    assert all(listed.get(k, "").startswith("evaluation 1 run(s)") for k in (6, 11, 16)), model.between["long_gaps"]
    info = json.loads((layout.device_dir(prof, 0) / layout.INFO_FILE).read_text())
    assert info[layout.K_OTHER_RUNS]["evaluation"]["count"] == 4  # the whole run's: step 20's evaluation too


def test_a_keras_validation_pass_is_attributed_to_validation(tmp_path: Path) -> None:
    prof = _profiled(tmp_path, [sys.executable, str(SCRIPTS / "keras_fit_validation.py")])
    model = summarize_prof_dir(prof).models[0]
    assert model.iterations == 8  # 2 epochs of 4 batches
    # Epoch 1's validation (3 batches of 16) lies between iterations 4 and 5; epoch 2's is after the last.
    assert model.between["other_runs"]["validation"]["count"] == 3
    assert set(model.between["other_runs"]) == {"validation"}


def test_the_page_names_the_validation_pass_in_an_off_scale_iteration(tmp_path: Path) -> None:
    """keras-io's MNIST case: the iteration after a task-traced one is left out of the statistics; when it also
    holds the epoch's validation pass it runs off the chart's scale, and the page says what it held."""
    environ = {k: v for k, v in os.environ.items() if not k.startswith("PROFILING_")}
    environ.update(TF_CPP_MIN_LOG_LEVEL="2", PROFILING_MODE="true", PROFILING_OPTIONS=json.dumps(
        {"output": str(tmp_path / "prof"), "training_trace": "on", "task_trace": "on", "start_step": 4, "stop_step": 4}))
    done = subprocess.run([sys.executable, str(SCRIPTS / "keras_fit_validation.py")], cwd=tmp_path, env=environ,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-4000:]
    prof = only_prof_dir(tmp_path / "prof")
    out = tmp_path / "page.html"
    assert main(["view", str(prof), "-o", str(out)]) == 0
    # Iteration 4 (the epoch's last) is traced; 5 follows it and its gap holds epoch 1's 3 validation batches.
    assert re.search(r"Iteration ID 5: [\d,]+ µs \(validation: 3 run\(s\), [\d,]+ µs; right after a task-traced one\)",
                     out.read_text())


def test_a_session_runs_kind_is_read_from_what_it_fetches() -> None:
    import tensorflow as tf

    from npu_tf_profiling.runtime.other_runs import session_run_kind

    tf1 = tf.compat.v1
    graph = tf.Graph()
    with graph.as_default():
        step = tf1.train.get_or_create_global_step()
        batch = tf1.data.make_one_shot_iterator(tf.data.Dataset.from_tensors([1.0]).repeat()).get_next()
        weight = tf1.get_variable("w", [1], initializer=tf1.zeros_initializer())
        loss = tf.reduce_sum(weight * batch)
        summary = tf1.summary.merge([tf1.summary.scalar("loss", loss)])
        saver = tf1.train.Saver()
        init = tf1.global_variables_initializer()
        next_step = step + 1  # what an Estimator hook reads each step
    kinds = {name: session_run_kind(graph, fetches) for name, fetches in {
        "batch": [batch], "loss": loss, "summary": summary, "save": saver.saver_def.save_tensor_name,
        "init": init, "step": next_step}.items()}
    assert kinds == {"batch": "input reads", "loss": "evaluation", "summary": "summaries", "save": "checkpoint",
                     "init": "initialization", "step": "variable reads"}
