"""Summary: shares of the iteration, steady-state statistics, XProf's input-bound verdict."""
from __future__ import annotations

import pytest

from npu_tf_profiling.reports.step import summary as sm
from tests.helpers.raw_fixtures import T0, Phases, iterations, make_prof_dir, record


@pytest.mark.parametrize(
    "share, verdict",
    [
        (0.25, sm.HIGHLY_INPUT_BOUND),
        (0.20, sm.HIGHLY_INPUT_BOUND),
        (0.1999, sm.MODERATELY_INPUT_BOUND),
        (0.10, sm.MODERATELY_INPUT_BOUND),
        (0.05, sm.MODERATELY_INPUT_BOUND),
        (0.0499, sm.NOT_INPUT_BOUND),
        (0.01, sm.NOT_INPUT_BOUND),
        (None, sm.UNKNOWN_INPUT_BOUND),
    ],
)
def test_verdict_thresholds(share, verdict):
    assert sm.input_bound_verdict(share) == verdict


@pytest.mark.parametrize(
    "get_next, verdict",
    [(250.0, sm.HIGHLY_INPUT_BOUND), (100.0, sm.MODERATELY_INPUT_BOUND), (10.0, sm.NOT_INPUT_BOUND)],
)
def test_getnext_share_drives_the_verdict(tmp_path, get_next, verdict):
    # Iteration = 300 data aug + 600 fp_bp + 100 refresh = 1000 µs.
    phases = Phases(data_aug=300, get_next=get_next, fp_bp=600, refresh=100)
    prof = make_prof_dir(tmp_path, {0: iterations(10, phases=phases)})
    (m,) = sm.summarize_prof_dir(prof).models
    assert m.input_measure == "GetNext Time"
    assert m.input_share == pytest.approx(get_next / 1000)
    assert m.verdict == verdict
    assert m.shares[sm.SHARE_DATA_AUG] == pytest.approx(0.3)
    assert m.shares[sm.SHARE_FP_BP] == pytest.approx(0.6)
    assert m.shares[sm.SHARE_REFRESH] == pytest.approx(0.1)
    assert m.shares[sm.SHARE_REDUCE] is None
    assert (m.iterations, m.basis, m.basis_iterations) == (10, sm.BASIS_STEADY, 9)
    assert m.median_iteration_time_us == m.mean_iteration_time_us == 1000.0


def test_without_getnext_data_aug_bound_is_the_input_measure(tmp_path):
    phases = Phases(data_aug=250, get_next=None, fp_bp=650, refresh=100)
    prof = make_prof_dir(tmp_path, {0: iterations(5, phases=phases)})
    (m,) = sm.summarize_prof_dir(prof).models
    assert m.input_measure.startswith("Data Aug Bound")
    assert m.input_share == pytest.approx(0.25)
    assert m.verdict == sm.HIGHLY_INPUT_BOUND
    assert m.shares[sm.SHARE_GETNEXT] is None


def test_first_iteration_is_left_out_of_steady_statistics(tmp_path):
    recs = iterations(4)
    # A slow first iteration (graph warm-up): 10 s between FP Start and its end.
    recs[0]["fp_start"] -= 10_000_000
    prof = make_prof_dir(tmp_path, {0: recs})
    (m,) = sm.summarize_prof_dir(prof).models
    assert m.median_iteration_time_us == m.mean_iteration_time_us == 1000.0
    assert m.basis_iterations == 3


def test_single_iteration_falls_back_to_all(tmp_path):
    prof = make_prof_dir(tmp_path, {0: iterations(1)})
    (m,) = sm.summarize_prof_dir(prof).models
    assert m.basis == sm.BASIS_ALL and m.basis_iterations == 1
    assert m.median_iteration_time_us == 900.0  # End - FP Start
    assert m.shares[sm.SHARE_DATA_AUG] is None
    assert m.verdict == sm.NOT_INPUT_BOUND  # GetNext 40 / 900


def test_reduce_share_sums_groups(tmp_path):
    phases = Phases(reduces=[(100, 50), (300, 150)])
    prof = make_prof_dir(tmp_path, {0: iterations(3, phases=phases)})
    (m,) = sm.summarize_prof_dir(prof).models
    assert m.shares[sm.SHARE_REDUCE] == pytest.approx(0.2)


def test_one_summary_per_device_and_model_and_text_and_dict(tmp_path):
    devices = {0: iterations(3, model_id=1) + iterations(2, model_id=2, start=T0 + 7), 1: iterations(2)}
    summary = sm.summarize_prof_dir(make_prof_dir(tmp_path, devices))
    assert [(m.device_id, m.model_id, m.iterations) for m in summary.models] == [(0, 1, 3), (0, 2, 2), (1, 1, 2)]
    text = summary.render_text()
    assert "Device 0, Model ID 2: 2 iterations" in text
    assert "median 1000.0 us" in text
    assert "Data Aug Bound 10.0%" in text and "-> not input-bound" in text
    d = summary.to_dict()
    assert d["models"][0]["shares"]["FP to BP"] == pytest.approx(0.7)
    assert d["models"][0]["verdict"] == sm.NOT_INPUT_BOUND


def test_inference_only_model_has_unknown_input(tmp_path):
    recs = [record(run=i, fp_start=None, bp_end=None, iteration_end=T0 + 1000 * i) for i in (1, 2, 3)]
    (m,) = sm.summarize_prof_dir(make_prof_dir(tmp_path, {0: recs})).models
    assert m.median_iteration_time_us == 1000.0
    assert m.shares[sm.SHARE_FP_BP] is None
    assert m.verdict == sm.UNKNOWN_INPUT_BOUND
