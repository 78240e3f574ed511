"""Task-traced iterations (FULL_TRACE) and the one after each stay out of the summary and the slow-rank tests.

They stay in the step-trace files (they happened), but their times measure the
profiler: a traced iteration's compute is slowed, and writing its step stats
lands in the next iteration's Data Aug Bound.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import tensorflow.compat.v1 as tf

from npu_tf_profiling.cli import main
from npu_tf_profiling.config.session_proto import write_request
from npu_tf_profiling.raw_format import layout
from npu_tf_profiling.raw_format.other_runs import K_MODEL_ID, K_SIGNATURE, RETRACE, encode_other_run
from npu_tf_profiling.raw_format.task_record import frame_task_record
from npu_tf_profiling.reports.cluster.analysis import analyze_cluster
from npu_tf_profiling.reports.cluster.data import CLUSTER_OUTPUT_DIR
from npu_tf_profiling.reports.step import summary as sm
from npu_tf_profiling.reports.task.traced import disturbed, traced_runs
from npu_tf_profiling.testing.cluster_synthetic import ClusterPlan, write_cluster
from tests.helpers.models import session_mlp
from tests.helpers.raw_fixtures import T0, make_prof_dir, record
from tests.helpers.trace_files import only_prof_dir, raw_records

pytestmark = pytest.mark.filterwarnings("ignore:.*is deprecated:UserWarning")

FP_BP, DATA_AUG, REFRESH = 900.0, 40.0, 60.0  # an untraced iteration: 1000 µs, 4% input


def disturbed_run(n: int, traced: set[int], step0: int | None = None) -> list[dict]:
    """``n`` iterations; the traced ones compute 4x longer, the next one waits 3 ms for the trace to be written."""
    out, end = [], T0
    for run in range(1, n + 1):
        fp = end + DATA_AUG + (3000.0 if run - 1 in traced else 0.0)
        bp = fp + FP_BP * (4 if run in traced else 1)
        end = bp + REFRESH
        out.append(record(run=run, step=None if step0 is None else step0 + run, fp_start=fp, bp_end=bp, iteration_end=end,
                          get_next=[[fp - DATA_AUG + 5, fp - 5]]))
    return out


def write_task_headers(device_dir: Path, traced: set[int], model_id: int = 1) -> None:
    """task_trace.bin records for ``traced`` runs (payloads are not needed to know which ran traced)."""
    with open(device_dir / layout.DATA_DIR / layout.TASK_TRACE_FILE, "ab") as handle:
        for run in sorted(traced):
            header = {layout.K_MODEL_ID: model_id, layout.K_RUN: run, layout.K_STEP: None,
                      layout.K_RUN_START: T0, layout.K_RUN_END: T0 + 1}
            handle.write(frame_task_record(header, b""))


def test_traced_and_following_iterations_are_left_out_of_the_summary(tmp_path: Path) -> None:
    traced = {6, 7, 8, 9, 10, 21, 22, 23, 24, 25}
    prof = make_prof_dir(tmp_path, {0: disturbed_run(30, traced)})
    write_task_headers(layout.device_dir(prof, 0), traced)
    (m,) = sm.summarize_prof_dir(prof).models
    assert (m.iterations, m.task_traced, m.task_traced_left_out) == (30, 10, 12)  # 10 traced, 11 and 26 after them
    assert m.basis_iterations == 30 - 12 - 1  # and the first iteration, which has no previous one
    assert m.median_iteration_time_us == m.mean_iteration_time_us == 1000.0
    assert m.shares[sm.SHARE_DATA_AUG] == pytest.approx(0.04)
    assert m.verdict == sm.NOT_INPUT_BOUND
    text = sm.summarize_prof_dir(prof).render_text()
    assert "12 task-traced iterations left out: 10 traced with FULL_TRACE" in text
    # The step-trace file keeps every iteration.
    assert main(["report", str(prof)]) == 0
    csv_rows = next((prof / layout.REPORT_DIR).glob("step_trace_*.csv")).read_text().splitlines()
    assert len(csv_rows) == 31


def test_without_task_trace_nothing_is_left_out(tmp_path: Path) -> None:
    prof = make_prof_dir(tmp_path, {0: disturbed_run(10, set())})
    (m,) = sm.summarize_prof_dir(prof).models
    assert (m.task_traced, m.task_traced_left_out, m.task_traced_included) == (0, 0, False)
    assert "task-traced" not in sm.summarize_prof_dir(prof).render_text()


def test_when_every_iteration_is_traced_they_are_used_and_the_text_says_so(tmp_path: Path) -> None:
    traced = set(range(1, 6))
    prof = make_prof_dir(tmp_path, {0: disturbed_run(5, traced)})
    write_task_headers(layout.device_dir(prof, 0), traced)
    summary = sm.summarize_prof_dir(prof)
    (m,) = summary.models
    assert m.task_traced_included and m.task_traced == 5 and m.basis_iterations == 4
    assert "include task_trace's overhead" in summary.render_text()


def test_other_models_runs_are_not_confused(tmp_path: Path) -> None:
    frame = pd.DataFrame({layout.K_MODEL_ID: [1, 1, 2, 2], layout.K_RUN: [3, 4, 3, 4]})
    is_traced, is_disturbed = disturbed(frame, frozenset({(1, 3)}))
    assert is_traced.tolist() == [True, False, False, False]
    assert is_disturbed.tolist() == [True, True, False, False]
    prof = make_prof_dir(tmp_path, {0: disturbed_run(6, set())})
    assert traced_runs(layout.device_dir(prof, 0)) == frozenset()  # no task_trace.bin: nothing traced


def test_slow_rank_analysis_leaves_traced_steps_out(tmp_path: Path) -> None:
    # Rank 1 is task-traced on steps 3-12 of 20: its FULL_TRACE steps compute 3 ms longer.
    write_cluster(tmp_path, ClusterPlan(ranks=3, steps=20, jitter=0.01))
    rank1 = next(tmp_path.glob("PROF_*RANK0001")) / "device_1"
    path = rank1 / layout.DATA_DIR / layout.TRAINING_TRACE_FILE
    recs = [json.loads(line) for line in path.read_text().splitlines()]
    shift = 0.0
    for rec in recs:
        slowed = 3000.0 if 3 <= rec["run"] <= 12 else 0.0
        rec["fp_start"] += shift
        rec["bp_end"] += shift + slowed
        rec["iteration_end"] += shift + slowed
        rec["reduce"] = [[s + shift + slowed, e + shift + slowed] for s, e in rec["reduce"]]
        shift += slowed
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    fooled = analyze_cluster(tmp_path).report
    assert [(s.rank, s.causes) for s in fooled.slow_ranks] == [(1, ["compute"])]  # what the profiler did to it

    write_task_headers(rank1, set(range(3, 13)))
    report = analyze_cluster(tmp_path).report
    assert report.slow_ranks == [] and "No slow rank" in report.verdict
    assert report.compute.ranks[1].steps_tested == 20 - 11  # steps 3-12 traced, 13 right after them
    assert "11 task-traced step(s) left out of the slow-rank tests (model 1: 3-13)" in report.verdict
    assert report.missing["total_missing"] == 0  # left out of the tests is not missing
    assert main(["cluster", str(tmp_path), "--no-tasks"]) == 0
    csv_text = (tmp_path / CLUSTER_OUTPUT_DIR / "cluster_step_trace_time.csv").read_text()
    assert len([line for line in csv_text.splitlines() if ",rank," in line]) == 60  # every step stays in the table


def test_a_step_retraced_on_one_rank_is_left_out_for_all_and_named(tmp_path: Path) -> None:
    # Rank 2's call of step 7 retraced its tf.function for 200 ms before the step ran (its FP Start, and all after it,
    # come 200 ms late): without its retrace line, the step is listed as rank 2's slow input.
    write_cluster(tmp_path, ClusterPlan(ranks=3, steps=20, jitter=0.01))
    rank2 = next(tmp_path.glob("PROF_*RANK0002")) / "device_2"
    path = rank2 / layout.DATA_DIR / layout.TRAINING_TRACE_FILE
    recs = [json.loads(line) for line in path.read_text().splitlines()]
    (step7,) = [r for r in recs if r["run"] == 7]
    previous_end = max(r["iteration_end"] for r in recs if r["run"] == 6)
    for rec in recs:
        if rec["run"] >= 7:
            for key in ("fp_start", "bp_end", "iteration_end"):
                rec[key] += 200_000.0
            rec["reduce"] = [[s + 200_000.0, e + 200_000.0] for s, e in rec["reduce"]]
    path.write_text("".join(json.dumps(r) + "\n" for r in recs))
    fooled = analyze_cluster(tmp_path).report
    assert "step 7 (model 1) rank 2: Data Aug Bound 200" in fooled.verdict  # the retrace read as a slow input

    (rank2 / layout.DATA_DIR / layout.OTHER_RUNS_FILE).write_bytes(encode_other_run(
        previous_end + 10.0, previous_end + 200_000.0, RETRACE, "train_step", {K_MODEL_ID: 1, K_SIGNATURE: "x: float32[3,8]"}))
    info_path = rank2 / layout.INFO_FILE
    info = json.loads(info_path.read_text())
    info_path.write_text(json.dumps({**info, layout.K_OTHER_RUNS_RECORDED: True}))
    analysis = analyze_cluster(tmp_path)
    assert analysis.retraced_steps == frozenset({(1, 7)}) and step7["run"] == 7
    assert ("1 retraced step(s) left out of the slow-rank tests (model 1: 7): the step's call traced a new concrete "
            "function on that rank") in analysis.report.verdict
    assert analysis.report.slow_ranks == [] and analysis.report.missing["total_missing"] == 0
    assert "step 7 (model 1) rank 2" not in analysis.report.verdict
    assert analysis.report.compute.ranks[2].steps_tested == fooled.compute.ranks[2].steps_tested - 1 == 20 - 1


def test_a_real_task_trace_window_is_left_out(tmp_path: Path) -> None:
    graph = tf.Graph()
    train_op, _, init_op, _ = session_mlp(graph)
    config = tf.ConfigProto()
    options = {"output": str(tmp_path), "training_trace": "on", "task_trace": "on", "schedule": {"skip_first": 3, "active": 4, "repeat": 1}}
    write_request(config, True, json.dumps(options))
    with tf.Session(graph=graph, config=config) as sess:
        sess.run(init_op)
        for _ in range(12):
            sess.run(train_op)
    prof = only_prof_dir(tmp_path)
    (m,) = sm.summarize_prof_dir(prof).models
    assert (m.iterations, m.task_traced, m.task_traced_left_out) == (12, 4, 5)  # runs 4-7 traced, 8 after them
    untraced = [r for r in raw_records(tmp_path) if not 4 <= r["run"] <= 8]
    ends = {r["run"]: r["iteration_end"] for r in raw_records(tmp_path)}
    times = [r["iteration_end"] - ends[r["run"] - 1] for r in untraced if r["run"] > 1]
    assert m.basis_iterations == len(times) == 6
    assert m.median_iteration_time_us == pytest.approx(float(np.median(np.round(times))), abs=1.0)


def test_a_cluster_traced_on_every_step_is_still_analysed(tmp_path: Path) -> None:
    write_cluster(tmp_path, ClusterPlan(ranks=3, steps=6, jitter=0.01))
    write_task_headers(next(tmp_path.glob("PROF_*RANK0002")) / "device_2", set(range(1, 7)))
    report = analyze_cluster(tmp_path).report
    assert report.compute.ranks[2].steps_tested == 6
    assert any(n.startswith("every step was task-traced") for n in report.notes)
