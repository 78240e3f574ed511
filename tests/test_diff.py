"""`npu-tf-prof diff` on synthetic runs written as the runtime writes them (no TensorFlow).

Runs come from ``npu_tf_profiling.testing`` (training_trace.bin frames for one
device, one PROF folder per rank for a cluster, task_trace.bin for task
traces); a change is planted on one side and must be found, named, and turned
into the exit code. The real-training checks are in test_diff_training.py.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest

from npu_tf_profiling.cli import main
from npu_tf_profiling.reports.diff.compare import DEFAULT_THRESHOLD_PCT
from npu_tf_profiling.reports.diff.stats import hodges_lehmann
from npu_tf_profiling.testing.cluster_synthetic import ClusterPlan, write_cluster
from npu_tf_profiling.testing.step_synthetic import StepPlan, write_step_prof_dir
from npu_tf_profiling.testing.task_synthetic import SynthOp, layered_ops, write_synthetic_prof_dir
from tests.helpers.no_tensorflow import run_without_tensorflow
from tests.helpers.raw_fixtures import iterations, make_prof_dir, record

# FP to BP is most of the iteration, so +10% there is +9% of Iteration Time; 3% noise on every phase.
BASE = dict(iterations=400, data_aug=50.0, get_next=20.0, fp_bp=900.0, reduce_offset=800.0, reduce=50.0, refresh=50.0, noise=0.03)


def write_pair(tmp_path: Path, baseline: dict, candidate: dict) -> tuple[Path, Path]:
    a = write_step_prof_dir(tmp_path / "a", StepPlan(**{**BASE, **baseline, "seed": 1}))
    b = write_step_prof_dir(tmp_path / "b", StepPlan(**{**BASE, **candidate, "seed": 2}))
    return a, b


def diff(capsys, *args: object) -> tuple[int, str, str]:
    code = main(["diff", *map(str, args)])
    out, err = capsys.readouterr()
    return code, out, err


def diff_json(capsys, *args: object) -> tuple[int, dict]:
    code, out, _ = diff(capsys, *args, "--json")
    return code, json.loads(out)


def test_hodges_lehmann_matches_the_brute_force_pairs() -> None:
    rng = np.random.default_rng(3)
    x, y = np.round(rng.gamma(4, 100, 41)), np.round(rng.gamma(4, 100, 37) + 25)
    pairs = np.sort((y[None, :] - x[:, None]).ravel())
    shift, (low, high) = hodges_lehmann(x, y)
    total = len(x) * len(y)
    k = math.floor(total / 2 - 1.959963984540054 * math.sqrt(total * (len(x) + len(y) + 1) / 12))
    assert shift == pytest.approx(np.median(pairs), abs=0.01)  # the bisection's resolution
    assert (low, high) == (pytest.approx(pairs[k - 1], abs=0.01), pytest.approx(pairs[total - k], abs=0.01))


def test_a_planted_ten_percent_in_fp_to_bp_is_found_and_named(tmp_path, capsys) -> None:
    a, b = write_pair(tmp_path, {}, {"fp_bp": 990.0})
    code, out, _ = diff(capsys, a, b, "--threshold", "5")
    assert code == 4
    first = out.splitlines()[0]
    assert first.startswith("REGRESSION: Iteration Time +")
    assert ", from FP to BP (+" in first
    _, report = diff_json(capsys, a, b, "--threshold", "5")
    phases = {p["phase"]: p for p in report["models"][0]["phases"]}
    assert phases["FP to BP"]["change_pct"] == pytest.approx(10.0, abs=1.0)
    low, high = phases["FP to BP"]["ci_pct"]
    assert low < 10.0 < high
    assert phases["FP to BP"]["moved"] == 1
    assert phases["Data Aug Bound"]["moved"] == 0 and phases["Iteration Refresh"]["moved"] == 0
    assert phases["Iteration Time"]["change_us"] == pytest.approx(90.0, abs=10.0)
    assert report["exit_code"] == 4 and report["verdict"] == first


def test_the_threshold_edges(tmp_path, capsys) -> None:
    a, b = write_pair(tmp_path, {}, {"fp_bp": 990.0})
    _, report = diff_json(capsys, a, b)
    change = report["models"][0]["phases"][0]["change_pct"]
    assert 8.0 < change < 10.0
    assert report["exit_code"] == 0 and report["verdict"].startswith("NO SIGNIFICANT CHANGE")
    assert report["verdict"].endswith(f"under the {DEFAULT_THRESHOLD_PCT:g}% threshold")
    assert diff(capsys, a, b, "--threshold", f"{change - 0.01:.4f}")[0] == 4
    assert diff(capsys, a, b, "--threshold", f"{change + 0.01:.4f}")[0] == 0
    assert diff(capsys, a, b, "--threshold", "0")[0] == 4


def test_an_improvement_is_named(tmp_path, capsys) -> None:
    a, b = write_pair(tmp_path, {"data_aug": 650.0}, {})  # 1,600 µs -> 1,000 µs: -37.5%
    code, out, _ = diff(capsys, a, b)
    assert code == 0
    assert out.splitlines()[0].startswith("IMPROVEMENT: Iteration Time -37.")
    assert ", from Data Aug Bound (-92." in out.splitlines()[0]


def test_the_same_run_twice_is_no_change(tmp_path, capsys) -> None:
    a, b = write_pair(tmp_path, {}, {})
    code, out, _ = diff(capsys, a, b, "--threshold", "0")
    assert code == 0
    assert out.startswith("NO SIGNIFICANT CHANGE: Iteration Time ")
    assert out.splitlines()[0].endswith("its 95% CI holds 0")


def test_warm_up_and_spikes_outside_the_steady_iterations_do_not_count(tmp_path, capsys) -> None:
    """The first iteration (no previous end) is left out as summary leaves it out; a few spikes move a median little."""
    a, b = write_pair(tmp_path, {}, {"spikes": {0: 1e6, 5: 20_000.0, 9: 20_000.0}})
    _, report = diff_json(capsys, a, b, "--threshold", "0")
    it = report["models"][0]["phases"][0]
    assert it["baseline_iterations"] == it["candidate_iterations"] == BASE["iterations"] - 1
    assert report["exit_code"] == 0


def slowed_cluster(tmp_path: Path, groups: int = 1) -> tuple[Path, Path]:
    write_cluster(tmp_path / "a", ClusterPlan(ranks=3, steps=40, jitter=0.02, seed=1))
    write_cluster(tmp_path / "b", ClusterPlan(ranks=3, steps=40, jitter=0.02, seed=2, groups=groups, slow={2: ("compute", 1500.0)}))
    return tmp_path / "a", tmp_path / "b"


def test_a_slowed_rank_is_named_with_both_slow_rank_verdicts(tmp_path, capsys) -> None:
    a, b = slowed_cluster(tmp_path)
    code, out, _ = diff(capsys, a, b)
    assert code == 4
    assert out.splitlines()[0].startswith("REGRESSION: Iteration Time +")
    assert "  baseline:  no slow rank" in out
    assert "  candidate: SLOW RANK 2 (compute" in out
    _, report = diff_json(capsys, a, b)
    moved = {r["rank"]: r for r in report["models"][0]["per_rank"]}
    assert moved[2]["regressed"][:1] == ["Iteration Time"] and "FP to BP" in moved[2]["regressed"]
    for rank in (0, 1):  # the others only wait for it: their Reduce grew, their compute did not
        assert "FP to BP" not in moved[rank]["regressed"] and "Reduce" in moved[rank]["regressed"]
    assert "rank 2 regressed: Iteration Time" in out
    assert "; rank 2: FP to BP +7" in out.splitlines()[0]  # the verdict names the slowed rank and its phase (+1,500 µs of 2,000)


def test_other_reduce_groups_and_a_missing_rank_are_said(tmp_path, capsys) -> None:
    a, b = slowed_cluster(tmp_path, groups=2)
    for path in (b / "PROF_10001_20240102030405_RANK0001").rglob("*"):
        if path.is_file():
            path.unlink()
    _, report = diff_json(capsys, a, b)
    notes = report["models"][0]["notes"]
    assert report["models"][0]["ranks"] == [0, 2]
    assert any(n.startswith("rank(s) 1 only in the baseline") for n in notes)
    assert any(n.startswith("all-reduce groups differ (baseline 1, candidate 2)") for n in notes)


def test_other_fp_bp_points_are_said(tmp_path, capsys) -> None:
    a, b = write_pair(tmp_path, {}, {})
    for prof, fp in ((a, "dense/MatMul"), (b, "conv1/Conv2D")):
        (prof / "device_0" / "info.json").write_text(json.dumps({"device_id": 0, "models": {"1": {"fp": fp, "bp": "grads/AddN"}}}))
    _, report = diff_json(capsys, a, b)
    assert report["models"][0]["notes"] == [
        "fp point differs (baseline dense/MatMul, candidate conv1/Conv2D): FP to BP, Data Aug Bound and Iteration Refresh "
        "span other ops on each side; Iteration Time compares alike"]


def test_models_are_matched_by_model_id(tmp_path, capsys) -> None:
    a = write_step_prof_dir(tmp_path / "a", StepPlan(**{**BASE, "seed": 1}), model_id=1)
    write_step_prof_dir(tmp_path / "a2", StepPlan(**{**BASE, "seed": 3}), model_id=7)
    # a second model in the baseline's PROF folder: another graph of the same process
    (a / "device_0" / "data" / "training_trace.bin").open("ab").write(
        (tmp_path / "a2" / a.name / "device_0" / "data" / "training_trace.bin").read_bytes())
    b = write_step_prof_dir(tmp_path / "b", StepPlan(**{**BASE, "fp_bp": 1200.0, "seed": 2}), model_id=1)
    code, out, _ = diff(capsys, a, b)
    assert code == 4
    assert "Note: Model ID 7 only in the baseline: not compared" in out
    assert diff(capsys, a, b, "--model", "7")[0] == 3
    assert diff(capsys, a, b, "--model", "1")[0] == 4
    other = write_step_prof_dir(tmp_path / "c", StepPlan(**{**BASE, "seed": 4}), model_id=2)
    code, _, err = diff(capsys, b, other)
    assert code == 3 and "no model and rank in both runs (baseline: Model ID 1 on rank(s) 0; candidate: Model ID 2" in err


def test_a_model_without_a_timed_iteration_is_said_not_compared(tmp_path, capsys) -> None:
    a = write_step_prof_dir(tmp_path / "a", StepPlan(**{**BASE, "seed": 1}))
    b = make_prof_dir(tmp_path / "b", {0: [record(fp_start=None)]})  # one iteration, no FP Start: no Iteration Time
    code, _, err = diff(capsys, a, b)
    assert code == 3 and "no model and rank in both runs" in err and "Traceback" not in err
    a2 = make_prof_dir(tmp_path / "a2", {0: iterations(20) + iterations(20, model_id=2)})
    b2 = make_prof_dir(tmp_path / "b2", {0: iterations(20) + [record(model_id=2, fp_start=None)]})  # Model ID 2 untimed
    _, report = diff_json(capsys, a2, b2)
    assert [m["model_id"] for m in report["models"]] == [1]
    assert report["notes"] == ["Model ID 2: no rank with a timed iteration in both runs: not compared"]


def test_ops_whose_time_changed_most_when_both_are_task_traced(tmp_path, capsys) -> None:
    ops = layered_ops(12)
    slower = [SynthOp(op.name, op.op_type, op.offset_ns, op.dur_ns * 3 if i == 5 else op.dur_ns, op.thread, op.device, op.inputs)
              for i, op in enumerate(ops)]
    a = write_synthetic_prof_dir(tmp_path / "a", 30, ops, traced={10, 11, 12}).prof_dir
    b = write_synthetic_prof_dir(tmp_path / "b", 30, slower, traced={10, 11}).prof_dir
    _, report = diff_json(capsys, a, b)
    top = report["models"][0]["ops"][0]
    assert (top["name"], top["op_type"]) == (ops[5].name, ops[5].op_type)
    assert top["change_us"] == pytest.approx(2 * ops[5].dur_ns / 1000, rel=1e-6)
    assert report["models"][0]["notes"] == [
        "4 task-traced iteration(s) left out in the baseline (they time the profiler)",
        "3 task-traced iteration(s) left out in the candidate (they time the profiler)"]
    untraced = write_step_prof_dir(tmp_path / "c", StepPlan(iterations=30))
    _, report = diff_json(capsys, a, untraced)
    assert report["models"][0]["ops"] == [] and report["models"][0]["notes"][-1] == "task traces in the baseline only: no op comparison"


def bad_args(tmp_path: Path, case: str) -> list[object]:
    good = write_step_prof_dir(tmp_path / "good", StepPlan(iterations=20))
    if case == "missing":
        return [tmp_path / "nope", good]
    if case == "file":
        return [good, good / "device_0" / "info.json"]
    if case == "empty":
        (tmp_path / "empty").mkdir()
        return [good, tmp_path / "empty"]
    if case == "no iterations":
        (tmp_path / "none" / "PROF_1_20240102030405_EMPTY000" / "device_0").mkdir(parents=True)
        return [good, tmp_path / "none"]
    if case == "bad threshold":
        return [good, good, "--threshold", "-1"]
    write_step_prof_dir(tmp_path / "copy", StepPlan(iterations=20)).rename(tmp_path / "good" / "PROF_9_20240102030405_COPY0000")
    return [good.parent, good]  # two runs of device 0, model 1 in one folder


@pytest.mark.parametrize("case, code, message", [
    ("missing", 2, "no such folder"),
    ("file", 2, "not a folder"),
    ("empty", 3, "holds none"),
    ("no iterations", 3, "no iteration records"),
    ("bad threshold", 2, "--threshold must be a percentage"),
    ("two runs in one folder", 2, "two runs in one folder"),
])
def test_bad_input_exit_codes(tmp_path, capsys, case, code, message) -> None:
    got, out, err = diff(capsys, *bad_args(tmp_path, case))
    assert got == code
    assert message in err and "Traceback" not in err and out == ""


def test_diff_never_imports_tensorflow(tmp_path) -> None:
    a, b = write_pair(tmp_path, {}, {"fp_bp": 1200.0})
    out = run_without_tensorflow(f"from npu_tf_profiling.cli import main\nassert main(['diff', {str(a)!r}, {str(b)!r}]) == 4", tmp_path)
    assert out.startswith("REGRESSION: Iteration Time +")


def test_view_compare_on_a_cluster_and_with_a_bad_candidate(tmp_path, capsys) -> None:
    pytest.importorskip("plotly")
    a, b = slowed_cluster(tmp_path)
    assert main(["view", str(a), "--compare", str(b)]) == 0
    page = Path(capsys.readouterr().out.strip())
    assert page == a / "npu_tf_prof_cluster" / "view_compare.html"
    html = page.read_text()
    assert "REGRESSION: Iteration Time +" in html and html.count('"barmode":"overlay"') == 6  # Reduce too: all six phases
    assert main(["view", str(a), "--compare", str(tmp_path / "nope")]) == 2
    _, err = capsys.readouterr()
    assert "no such folder" in err and "Traceback" not in err
