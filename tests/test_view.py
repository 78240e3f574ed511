"""`npu-tf-prof view` and `npu-tf-prof tensorboard` on raw data the test writes (no TensorFlow, no browser).

What the page draws is checked on the numbers it is built from (``reports.view.phases``,
the figures), and the page's text; the browser checks are in test_view_browser.py.
"""
from __future__ import annotations

import os
import re
import sys
from pathlib import Path

import numpy as np
import pytest

from npu_tf_profiling.cli import main
from npu_tf_profiling.config import ProfilingOptions, ProfilingOptionsError
from npu_tf_profiling.raw_format import layout
from npu_tf_profiling.reports.prof_dir import load_prof_dir
from npu_tf_profiling.reports.step import summary as sm
from npu_tf_profiling.reports.step import table as st
from npu_tf_profiling.reports.view import phases as ph
from npu_tf_profiling.reports.view.model_section import phases_figure
from npu_tf_profiling.reports.writer import write_all_reports
from npu_tf_profiling.testing.cluster_synthetic import ClusterPlan, write_cluster
from npu_tf_profiling.testing.step_synthetic import StepPlan, write_step_prof_dir
from tests.helpers.no_tensorflow import run_without_tensorflow
from tests.helpers.raw_fixtures import Phases, iterations, make_prof_dir

# An all-reduce from FP + 600 µs for 300 µs: 100 µs inside FP to BP (700 µs), 200 µs after BP End.
PHASES = Phases(data_aug=100.0, get_next=40.0, fp_bp=700.0, refresh=200.0, reduces=[(600.0, 300.0)])
SLOW_EXTRA_US = 50_000.0


def model_rows(prof: Path):
    data = load_prof_dir(prof)
    return sm.annotated_frame(data.table, data.task_traced)


def test_the_stack_tiles_each_iteration_and_splits_reduce_where_it_lies(tmp_path) -> None:
    prof = make_prof_dir(tmp_path, {0: iterations(12, phases=PHASES)})
    rows = model_rows(prof)
    values = ph.phase_values(rows)
    parts = ph.segments(values)
    assert list(parts) == ["GetNext", "Data Aug Bound (rest)", "FP to BP (rest)", "Reduce", "Iteration Refresh (rest)"]
    steady = rows["_has_previous"].to_numpy()
    stacked = sum(parts.values())
    np.testing.assert_allclose(stacked[steady], values[ph.ITERATION_TIME][steady])
    assert parts["Reduce"][steady].tolist() == [300.0] * int(steady.sum())
    assert parts["FP to BP (rest)"][steady].tolist() == [600.0] * int(steady.sum())
    assert parts["Iteration Refresh (rest)"][steady].tolist() == [0.0] * int(steady.sum())
    assert parts["GetNext"][steady].tolist() == [40.0] * int(steady.sum())


def test_no_reduce_and_no_getnext_give_the_three_tiling_phases(tmp_path) -> None:
    prof = make_prof_dir(tmp_path, {0: iterations(5, phases=Phases(get_next=None))})
    parts = ph.segments(ph.phase_values(model_rows(prof)))
    assert list(parts) == ["Data Aug Bound", "FP to BP", "Iteration Refresh"]


def test_a_long_run_is_binned_keeps_its_spike_and_the_page_says_so(tmp_path) -> None:
    n, slow = 20_001, 12_344
    prof = write_step_prof_dir(tmp_path, StepPlan(iterations=n, spikes={slow: SLOW_EXTRA_US}))
    rows = model_rows(prof)
    values = ph.phase_values(rows)
    ids = rows[st.ITERATION_ID_COL].astype("int64").to_numpy()
    binning = ph.Binning.for_length(n)
    assert binning.binned and binning.size == 5 and binning.bins <= ph.TARGET_BINS
    traces = {t["name"]: t for t in phases_figure(ids, values, binning)["data"]}
    assert len(traces["Iteration Time"]["x"]) == binning.bins
    assert max(traces["slowest in bin"]["y"]) == 1000.0 + SLOW_EXTRA_US  # the max line keeps the spike
    assert max(traces["Iteration Time"]["y"]) == pytest.approx(1000.0 + SLOW_EXTRA_US / 5)  # the mean dilutes it
    _, used, _ = sm.basis_rows(rows)
    top = ph.slowest(used[st.ITERATION_ID_COL].astype("int64").to_numpy(), ph.phase_values(used))[0]
    assert (top.iteration_id, top.dominant, top.excess_us) == (slow + 1, "FP to BP", SLOW_EXTRA_US)
    dist = ph.distribution(ph.phase_values(used)[ph.ITERATION_TIME])
    assert dist.iterations == n - 1 and sum(dist.counts) == n - 1 and dist.percentiles[50] == 1000.0

    out = tmp_path / "page.html"
    assert main(["view", str(prof), "-o", str(out)]) == 0
    page = out.read_text()
    assert "20,001 iterations, more than 10,000: each point is the mean of 5 consecutive iterations" in page
    assert f"<td>{slow + 1}</td>" in page and f"FP to BP (+{SLOW_EXTRA_US:,.0f} µs)" in page
    assert not re.findall(r"<script[^>]*\bsrc=|<link\b|<img\b|<iframe\b", page)  # plotly.js inline, nothing fetched


def test_a_long_first_iteration_does_not_flatten_the_phases_chart(tmp_path) -> None:
    prof = write_step_prof_dir(tmp_path, StepPlan(iterations=40, spikes={0: 40_000.0}))  # the first: its set-up
    out = tmp_path / "page.html"
    assert main(["view", str(prof), "-o", str(out)]) == 0
    page = out.read_text()
    assert "1 iteration(s) run past it: Iteration ID 1: 40,900 µs (the first iteration&#x27;s set-up)" in page
    assert '"range":[0,1150.0]' in page  # the steady 1,000 µs iterations, plus headroom


def test_a_short_run_draws_every_iteration(tmp_path) -> None:
    prof = make_prof_dir(tmp_path, {0: iterations(30, phases=PHASES)})
    assert main(["view", str(prof)]) == 0
    page = (layout.report_dir(prof) / "view.html").read_text()
    assert "more than 10,000" not in page and "slowest in bin" not in page
    assert "Input: 4.0% of step time (GetNext Time) -&gt; not input-bound" in page  # the summary's verdict line
    assert "no phase above its median" in page  # identical iterations: none is slow for a reason


def _tree(root: Path) -> dict[str, object]:
    """Every path under ``root``: a file's bytes and mtime, a folder's name only (its mtime moves when a child is added)."""
    return {str(p.relative_to(root)): (p.read_bytes(), p.stat().st_mtime_ns) if p.is_file() else None for p in sorted(root.rglob("*"))}


def test_view_writes_its_page_and_nothing_else(tmp_path, capsys) -> None:
    write_cluster(tmp_path / "job", ClusterPlan(ranks=3, steps=12))
    before = _tree(tmp_path)
    assert main(["view", str(tmp_path / "job")]) == 0
    page = tmp_path / "job" / "npu_tf_prof_cluster" / "view.html"
    assert capsys.readouterr().out == f"{page}\n"
    after = _tree(tmp_path)
    assert set(after) - set(before) == {"job/npu_tf_prof_cluster", "job/npu_tf_prof_cluster/view.html"}
    assert all(after[k] == v for k, v in before.items())


@pytest.mark.parametrize("case,code,words", [
    ("missing", 2, "no such folder"),
    ("file", 2, "not a folder"),
    ("device", 2, "a device folder"),
    ("empty", 3, "not a PROF_* folder, and holds none"),
    ("no_trace", 3, "no step trace to draw"),
])
@pytest.mark.parametrize("command", ["view", "tensorboard"])
def test_bad_input_names_the_path_and_what_was_expected(tmp_path, capsys, case, code, words, command) -> None:
    prof = make_prof_dir(tmp_path, {0: None})
    (tmp_path / "a_file").write_text("x")
    (tmp_path / "empty").mkdir()
    path = {"missing": tmp_path / "nope", "file": tmp_path / "a_file", "device": layout.device_dir(prof, 0),
            "empty": tmp_path / "empty", "no_trace": prof}[case]
    args = [command, str(path)] + (["--logdir", str(tmp_path / "tb")] if command == "tensorboard" else [])
    assert main(args) == code
    err = capsys.readouterr().err
    assert str(path) in err
    assert words in err or (case == "no_trace" and "no iteration records" in err)
    assert not (tmp_path / "tb").exists() and not (layout.report_dir(prof) / "view.html").exists()


def test_view_without_plotly_says_how_to_install_it(tmp_path, capsys, monkeypatch) -> None:
    prof = make_prof_dir(tmp_path, {0: iterations(3)})
    for name in ("plotly", "plotly.io", "plotly.offline"):
        monkeypatch.setitem(sys.modules, name, None)  # what a missing package looks like to `import`
    assert main(["view", str(prof)]) == 2
    assert "pip install 'npu_tf_profiling[view]'" in capsys.readouterr().err
    assert not layout.report_dir(prof).exists()


def _scalars(run_dir: Path) -> dict[str, list]:
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator

    acc = EventAccumulator(str(run_dir), size_guidance={"scalars": 0})
    acc.Reload()
    return {tag: acc.Scalars(tag) for tag in acc.Tags()["scalars"]}


def test_tensorboard_scalars_round_trip_one_run_per_rank_and_model(tmp_path, capsys) -> None:
    job = tmp_path / "job"
    write_cluster(job, ClusterPlan(ranks=3, steps=15))
    two_models = make_prof_dir(tmp_path / "gan", {0: iterations(6, model_id=1) + iterations(4, model_id=2)})
    logdir = tmp_path / "tb"
    assert main(["tensorboard", str(job), "--logdir", str(logdir)]) == 0
    assert main(["tensorboard", str(job), "--logdir", str(logdir)]) == 0  # again: replaced, never duplicated
    assert main(["tensorboard", str(two_models), "--logdir", str(tmp_path / "tb2")]) == 0
    assert sorted(p.name for p in logdir.iterdir()) == ["rank_0_model_1", "rank_1_model_1", "rank_2_model_1"]
    assert sorted(p.name for p in (tmp_path / "tb2").iterdir()) == ["rank_0_model_1", "rank_0_model_2"]
    assert all(len(list(run.iterdir())) == 1 for run in logdir.iterdir())
    for rank in range(3):
        table = load_prof_dir(next(job.glob(f"PROF_*RANK{rank:04d}"))).table
        scalars = _scalars(logdir / f"rank_{rank}_model_1")
        frame = table.frame.assign(reduce=table.total_reduce())
        for tag, column in [("Iteration Time(us)", st.ITERATION_TIME), ("Data Aug Bound(us)", st.DATA_AUG_BOUND),
                            ("FP to BP Time(us)", st.FP_TO_BP), ("Iteration Refresh(us)", st.ITERATION_REFRESH),
                            ("GetNext Time(us)", st.GETNEXT_TIME), ("Reduce Duration(us)", "reduce")]:
            known = frame[frame[column].notna()]
            events = scalars[f"step_trace/{tag}"]
            assert [e.step for e in events] == known[st.ITERATION_ID_COL].astype(int).tolist(), tag
            assert [e.value for e in events] == known[column].astype(float).tolist(), tag
            assert [e.wall_time for e in events] == pytest.approx((known[st.ITERATION_END].astype(float) / 1e6).tolist(), abs=1e-6)
    assert len(_scalars(tmp_path / "tb2" / "rank_0_model_2")["step_trace/Iteration Time(us)"]) == 4


def test_two_jobs_claiming_one_rank_are_refused(tmp_path, capsys) -> None:
    make_prof_dir(tmp_path, {0: iterations(3)}, pid=1)
    make_prof_dir(tmp_path, {0: iterations(3)}, pid=2)
    assert main(["tensorboard", str(tmp_path), "--logdir", str(tmp_path / "tb")]) == 2
    assert "rank 0 is in both" in capsys.readouterr().err and not (tmp_path / "tb").exists()


def test_the_tensorboard_option_is_validated_and_made_absolute(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert ProfilingOptions.parse({"tensorboard": "logs/tb"}).tensorboard == str(tmp_path / "logs" / "tb")
    for bad, words in [("", "option 'tensorboard': invalid value ''; expected a non-empty directory path"),
                       (3, "option 'tensorboard': invalid value 3"),
                       ("a\nb", "option 'tensorboard': invalid value"),
                       ("~no_such_user_x/tb", "option 'tensorboard': '~no_such_user_x/tb' cannot be expanded")]:
        with pytest.raises(ProfilingOptionsError, match=words.replace("(", r"\(")):
            ProfilingOptions.parse({"tensorboard": bad})


def test_the_reports_write_the_scalars_when_the_option_asks(tmp_path) -> None:
    logdir = tmp_path / "tb"
    asked = make_prof_dir(tmp_path / "a", {0: iterations(5)}, info={"device_id": 0, "options": {"tensorboard": str(logdir)}})
    paths = write_all_reports(asked)
    event_files = list((logdir / "rank_0_model_1").iterdir())
    assert len(event_files) == 1 and event_files[0] in paths
    assert any(note.startswith(f"TensorBoard: 1 run(s) of step phases in {logdir}") for note in paths.notes)
    write_all_reports(asked)  # a second session close replaces the file
    assert list((logdir / "rank_0_model_1").iterdir()) == event_files
    plain = make_prof_dir(tmp_path / "b", {0: iterations(5)}, info={"device_id": 0, "options": {"training_trace": "on"}})
    assert not [p for p in write_all_reports(plain) if "tfevents" in p.name]


def test_view_and_tensorboard_never_import_tensorflow(tmp_path) -> None:
    make_prof_dir(tmp_path, {0: iterations(4)})
    run_without_tensorflow(
        "from npu_tf_profiling.cli import main\n"
        f"assert main(['view', {str(tmp_path)!r}]) == 0\n"
        f"assert main(['tensorboard', {str(tmp_path)!r}, '--logdir', {str(tmp_path / 'tb')!r}]) == 0\n",
        cwd=tmp_path,
    )
    assert os.path.isdir(tmp_path / "tb" / "rank_0_model_1")


def test_a_hostile_op_name_is_text_on_the_page(tmp_path) -> None:
    """An op named like markup is shown as text: it can neither end plotly's script nor add one."""
    from dataclasses import replace

    from npu_tf_profiling.testing.task_synthetic import layered_ops, write_synthetic_prof_dir

    hostile = '</script><script>alert("x")</script><b>bold</b>'
    ops = layered_ops(6)
    ops[0] = replace(ops[0], name=hostile, dur_ns=90_000)  # the longest op: first in the top-ops chart
    run = write_synthetic_prof_dir(tmp_path, 20, ops, traced=range(11, 14))
    out = tmp_path / "page.html"
    assert main(["view", str(run.prof_dir), "-o", str(out)]) == 0
    page = out.read_text()
    assert hostile not in page and "<b>bold" not in page
    assert page.count("&lt;\\u002fscript&gt;&lt;script&gt;alert(&quot;x&quot;)") == 2  # escaped: the bar's label and hover
    assert "Top 6 ops by total time: device 0, Model ID 1 (3 task-traced iteration(s))" in page


def test_top_ops_draw_one_bar_per_op_even_where_cut_names_read_the_same() -> None:
    import pandas as pd

    from npu_tf_profiling.reports.task import op_summary as ops
    from npu_tf_profiling.reports.view.task_section import top_ops_figure

    # Three ops whose names, cut to the label's length, all read "…transpose/Conv2DBackpropFilter" (a VAE's).
    names = [f"gradient_tape/model/decoder_{k}/very_long_scope_name_here/conv2d_transpose/Conv2DBackpropFilter"
             for k in (1, 2, 3)] + ["gradient_tape/model/dense/MatMul"]
    frame = pd.DataFrame({ops.OP_NAME: names, ops.OP_TYPE: ["Conv2DBackpropFilter"] * 3 + ["MatMul"],
                          ops.COUNT: [3, 3, 3, 3], ops.TOTAL_TIME: [400.0, 300.0, 200.0, 100.0],
                          ops.AVG_TIME: [133.3, 100.0, 66.7, 33.3], ops.RATIO: [40.0, 30.0, 20.0, 10.0]})
    figure = top_ops_figure(frame)
    (bar,) = figure["data"]
    axis = figure["layout"]["yaxis"]
    assert len(set(bar["y"])) == len(bar["x"]) == 4  # one position, so one bar, per op
    labels = dict(zip(axis["tickvals"], axis["ticktext"]))
    assert len(set(labels.values())) == 4  # the labels read differently
    assert labels[max(bar["y"])].endswith("Conv2DBackpropFilter") and bar["x"][bar["y"].index(max(bar["y"]))] == 400.0
    for name, hover in zip(names, bar["hovertext"]):
        assert hover.startswith(name)  # the whole name on hover
