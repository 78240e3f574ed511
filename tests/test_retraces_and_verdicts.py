"""Issue 46: a verdict one long gap cannot decide, retraces named, and diff ranking phases by their part in the change.

The verdict and the diff's ranking are checked on synthetic raw files (exact numbers); the retraces end to end
on one TensorFlow 2 loop (`scripts/tf2_loop_retrace.py`, one training shared by the module): a partial last
batch retraces its step, and one long validation call sits among short gaps.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from npu_tf_profiling.raw_format import layout
from npu_tf_profiling.raw_format.other_runs import encode_other_run
from npu_tf_profiling.reports.step.summary import summarize_prof_dir
from npu_tf_profiling.testing.step_synthetic import T0_US, StepPlan, write_step_prof_dir

PERIOD = 100.0 + 700.0 + 200.0  # StepPlan's data_aug + fp_bp + refresh, µs


def _with_other_runs(prof: Path, runs: list[tuple[float, float, str]]) -> None:
    device = layout.device_dir(prof, 0)
    (device / layout.INFO_FILE).write_text(json.dumps({"device_id": 0, layout.K_OTHER_RUNS_RECORDED: True}))
    with open(device / layout.DATA_DIR / layout.OTHER_RUNS_FILE, "wb") as out:
        for start, end, kind in runs:
            out.write(encode_other_run(start, end, kind, None))


def test_one_long_validation_does_not_decide_the_sentence(tmp_path: Path) -> None:
    """29 gaps of 100 µs hold input and host time only; one of 20,100 µs holds a 20 ms function call. Its mean
    share is the largest, but the median gap is host: the sentence says so, and the long gap is listed apart."""
    prof = write_step_prof_dir(tmp_path, StepPlan(iterations=30, gap_spikes={15: 20_000.0}))
    start = T0_US + 15 * PERIOD  # iteration 16's Data Aug Bound starts at iteration 15's end
    _with_other_runs(prof, [(start + 20, start + 20_020, "function calls")])
    model = summarize_prof_dir(prof).models[0]
    between = model.between
    assert between["other_share"] == pytest.approx(20_000 / (29 * PERIOD + 20_000))
    assert between["other_share"] > max(between["input_share"], between["host_share"])  # the mean says "other runs"
    assert between["typical"] == "host" and between["median_gap_us"] == pytest.approx(100.0)
    assert between["long_gaps"]["count"] == 1
    assert between["long_gaps"]["listed"] == [{"iteration": 16, "duration_us": pytest.approx(20_100.0),
                                               "cause": "function calls 1 run(s), 20,000 us"}]
    text = "\n".join(model.render_lines())
    assert "mostly function calls runs" not in text
    assert "mean shares of step time" in text
    assert "the median gap (100.0 us) is mostly host" in text
    assert "Long gaps (1 over 5x the median Data Aug Bound, 100.0 us): Iteration ID 16: 20100.0 us" in text


def test_when_most_gaps_hold_the_other_runs_the_sentence_stands(tmp_path: Path) -> None:
    prof = write_step_prof_dir(tmp_path, StepPlan(iterations=10))
    _with_other_runs(prof, [(T0_US + k * PERIOD + 5, T0_US + k * PERIOD + 55, "evaluation") for k in range(1, 10)])
    model = summarize_prof_dir(prof).models[0]
    assert model.between["typical"] == "other runs" and model.between["long_gaps"]["count"] == 0
    assert "the time between iterations is mostly evaluation runs, not input" in "\n".join(model.render_lines())


def test_diff_marks_a_phase_with_a_small_part_of_the_change_secondary(tmp_path: Path, capsys) -> None:
    """+3,000 µs of input per iteration and +150 µs of FP to BP (+50% of a 300 µs phase, 5% of the change):
    Data Aug Bound is the cause, FP to BP secondary; the exit code is still the regression's."""
    from npu_tf_profiling.cli import main

    plan = dict(iterations=60, data_aug=500.0, get_next=100.0, fp_bp=300.0, reduce_offset=100.0, reduce=50.0, refresh=50.0,
                noise=0.02)
    a = write_step_prof_dir(tmp_path / "a", StepPlan(**plan, seed=1))
    b = write_step_prof_dir(tmp_path / "b", StepPlan(**{**plan, "data_aug": 3_500.0, "fp_bp": 450.0}, seed=2))
    assert main(["diff", str(a), str(b), "--json"]) == 4
    report = json.loads(capsys.readouterr().out)
    phases = {p["phase"]: p for p in report["models"][0]["phases"]}
    assert ", from Data Aug Bound (+" in report["verdict"]
    assert phases["FP to BP"]["moved"] == 1 and phases["FP to BP"]["secondary"]  # past the threshold, not a cause
    assert phases["FP to BP"]["part_of_change"] == pytest.approx(150 / 3_150, abs=0.02)
    assert not phases["Data Aug Bound"]["secondary"] and phases["Data Aug Bound"]["part_of_change"] > 0.9
    assert main(["diff", str(a), str(b)]) == 4
    row = next(line for line in capsys.readouterr().out.splitlines() if line.strip().startswith("FP to BP"))
    assert row.endswith("secondary") and "regressed" not in row


@pytest.fixture(scope="module")
def retraced_loop(tmp_path_factory) -> tuple[Path, dict]:
    """One profiled run of scripts/tf2_loop_retrace.py (3 epochs of 7 steps), shared by the tests below."""
    import os
    import subprocess
    import sys

    from tests.helpers.trace_files import only_prof_dir

    root = tmp_path_factory.mktemp("retrace")
    environ = {k: v for k, v in os.environ.items() if not k.startswith("PROFILING_")}
    environ.update(TF_CPP_MIN_LOG_LEVEL="2", PROFILING_MODE="true",
                   PROFILING_OPTIONS=json.dumps({"output": str(root / "prof"), "training_trace": "on"}))
    done = subprocess.run([sys.executable, str(Path(__file__).parent / "scripts" / "tf2_loop_retrace.py"), "3"], cwd=root,
                          env=environ, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-4000:]
    return only_prof_dir(root / "prof"), json.loads(done.stdout.strip().splitlines()[-1])


def test_a_partial_last_batch_retrace_is_named_and_left_out(retraced_loop) -> None:
    prof, run = retraced_loop
    lines = [json.loads(line) for line in (layout.device_dir(prof, 0) / layout.DATA_DIR / layout.OTHER_RUNS_FILE).read_text().splitlines()]
    retraces = [line for line in lines if line["kind"] == "retrace"]
    # Only the first partial batch traces: the two later ones reuse its trace, and the first call's two traces
    # (variables created, then the function) are one call.
    assert [(r["name"], r["model_id"], r["signature"]) for r in retraces] == [("train_step", 1, "x: float32[4,8], y: float32[4,1]")]
    model = summarize_prof_dir(prof).models[0]
    retraced = run["retrace_after"] + 1
    assert model.iterations == run["steps"] == 21
    assert [r["iteration"] for r in model.retraces] == [retraced]
    assert model.basis_iterations == run["steps"] - 2  # neither the first iteration nor the retraced one is steady
    words = model.retraces[0]["retrace"]
    assert words.startswith("retrace of train_step (x: float32[4,8], y: float32[4,1]): ")
    seconds = float(words.rsplit(": ", 1)[1].removesuffix(" s"))
    from npu_tf_profiling.reports.prof_dir import load_prof_dir

    table = load_prof_dir(prof).table.frame
    gap_us = float(table.loc[table["Iteration ID"] == retraced, "Data Aug Bound(us)"].iloc[0])
    assert 0 < seconds * 1e6 <= gap_us + 1000  # the retrace's part of the call lies in that iteration's gap (ms rounding)
    assert f"Iteration ID {retraced}: retrace of train_step" in "\n".join(model.render_lines())


def test_view_and_diff_name_the_retrace(retraced_loop, tmp_path: Path, capsys) -> None:
    from npu_tf_profiling.cli import main

    prof, run = retraced_loop
    named = f"Iteration ID {run['retrace_after'] + 1}: retrace of train_step (x: float32[4,8], y: float32[4,1])"
    assert main(["diff", str(prof), str(prof)]) == 0
    assert f"left out in the candidate like warm-up: {named}" in capsys.readouterr().out
    pytest.importorskip("plotly")
    out = tmp_path / "page.html"
    assert main(["view", str(prof), "-o", str(out)]) == 0
    assert named in out.read_text()


def test_one_long_validation_in_a_loop_is_listed_apart(retraced_loop) -> None:
    """Epoch 2's third step is followed by one validation call (its trace and an 80 ms sleep); the other 18
    steady gaps hold none. The machine's load may make other gaps long too; the validation's is listed."""
    prof, run = retraced_loop
    between = summarize_prof_dir(prof).models[0].between
    assert {kind: value["count"] for kind, value in between["other_runs"].items()} == {"function calls": 1}
    assert between["typical"] != "other runs"
    listed = {g["iteration"]: g["cause"] for g in between["long_gaps"]["listed"]}
    assert listed.get(11, "").startswith("function calls 1 run(s)"), between["long_gaps"]
