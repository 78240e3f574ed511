"""What ``cluster`` writes for a large cluster: a timeline of the ranks that matter, rank folders on request.

* Past ``timeline_focus.ALL_RANKS_MAX`` ranks the merged timeline draws the
  ranks the verdict names, a typical and the fastest rank, each exactly as
  ``--timeline all`` draws it; the command says which and why.
* The charts page's cluster part comes from the same compact rows and equals
  one computed from every rank's own step table.
* Past ``rank_layouts.AUTO_FILL_MAX`` ranks without an msprof-analyze folder,
  none is written and the command says so; ``--layouts`` writes them all, and
  then nothing is left to say.
"""
from __future__ import annotations

import json
import re
from collections import defaultdict
from pathlib import Path

from npu_tf_profiling.cli import main
from npu_tf_profiling.reports.encoders.chrome_trace import validate_chrome_trace
from npu_tf_profiling.reports.cluster import rank_layouts
from npu_tf_profiling.reports.cluster import timeline as ctl
from npu_tf_profiling.reports.cluster import timeline_focus as tfo
from npu_tf_profiling.testing.cluster_synthetic import ClusterPlan, write_cluster

OUT = "npu_tf_prof_cluster"


def _events_by_rank(path: Path) -> dict[int, list[str]]:
    events = json.loads(path.read_text())
    assert validate_chrome_trace(events) == []
    by_rank: dict[int, list[str]] = defaultdict(list)
    for event in events:
        by_rank[event["pid"]].append(json.dumps(event, sort_keys=True))
    return {rank: sorted(texts) for rank, texts in by_rank.items()}


def test_a_large_cluster_draws_the_named_ranks_beside_a_typical_and_the_fastest(tmp_path, capsys):
    ranks = tfo.ALL_RANKS_MAX + 8
    write_cluster(tmp_path, ClusterPlan(ranks=ranks, steps=6, slow={17: ("input", 3000.0)}, binary=True))
    assert main(["cluster", str(tmp_path), "--output-dir", str(tmp_path / "all"), "--timeline", "all"]) == 0
    every = _events_by_rank(tmp_path / "all" / ctl.JSON_NAME)
    assert sorted(every) == list(range(ranks))
    capsys.readouterr()
    assert main(["cluster", str(tmp_path)]) == 0
    err = capsys.readouterr().err
    focus = _events_by_rank(tmp_path / OUT / ctl.JSON_NAME)
    assert 17 in focus and 3 <= len(focus) <= 3 + tfo.NAMED_MAX, sorted(focus)
    assert all(focus[rank] == every[rank] for rank in focus)  # each drawn rank as the whole timeline draws it
    (note,) = [line for line in err.splitlines() if "ranks drawn" in line]
    assert f"{len(focus)} ranks drawn" in note and f"of {ranks};" in note
    assert "17 (slow: input)" in note and "(typical)" in note and "(fastest)" in note
    assert "--timeline all" in note
    assert (tmp_path / OUT / "cluster_step_trace_time.csv").read_text() == (tmp_path / "all" / "cluster_step_trace_time.csv").read_text()


def test_many_ranks_without_a_folder_are_named_and_written_on_request(tmp_path, capsys):
    ranks = rank_layouts.AUTO_FILL_MAX + 1
    write_cluster(tmp_path, ClusterPlan(ranks=ranks, steps=3))  # no worker wrote its reports
    assert main(["cluster", str(tmp_path)]) == 0
    err = capsys.readouterr().err
    assert f"{ranks} rank(s) have no msprof-analyze folder" in err and "--layouts" in err
    assert not list(tmp_path.glob("*_ascend_pt"))
    assert main(["cluster", str(tmp_path), "--layouts"]) == 0
    assert f"msprof-analyze layout written for rank(s) 0-{ranks - 1}" in capsys.readouterr().err
    assert len(list(tmp_path.glob("*_ascend_pt"))) == ranks
    assert main(["cluster", str(tmp_path)]) == 0
    assert "msprof-analyze" not in capsys.readouterr().err  # every folder up to date now


def test_the_charts_page_cluster_part_equals_one_read_from_every_rank_table(tmp_path):
    """The page's medians and heatmaps come from the analysis' compact rows (never every rank's table in one
    process): each equals what every rank's own step table gives, task-traced steps left out on every rank."""
    import numpy as np

    from npu_tf_profiling.reports.cluster.analysis import analyze_cluster
    from npu_tf_profiling.reports.cluster.data import load_cluster
    from npu_tf_profiling.reports.step import summary as sm
    from npu_tf_profiling.reports.step import table as st
    from npu_tf_profiling.reports.view import cluster_section as cs
    from npu_tf_profiling.reports.view import phases as ph
    from npu_tf_profiling.testing.task_synthetic import layered_ops, write_synthetic_prof_dir

    for rank, traced in ((0, [4]), (1, [4, 5]), (2, [9])):
        write_synthetic_prof_dir(tmp_path, 12, layered_ops(5), traced=traced, device_id=rank, pid=100 + rank, with_step=True,
                                 info={"device_id": rank, "host": "h"})
    analysis = analyze_cluster(tmp_path, view_columns=True)
    assert len(analysis.traced_steps) >= 3  # steps disturbed on one rank are left out on all
    rows = analysis.rows
    figure = cs.medians_figure(rows, cs._disturbed(rows, analysis.traced_steps))
    got = {trace["name"]: dict(zip(trace["x"], trace["y"])) for trace in figure["data"]}
    table = load_cluster(tmp_path).table
    keys = zip(table.frame[st.MODEL_ID].astype(int), table.frame[st.ITERATION_ID_COL].astype(int))
    frame = sm.annotated_frame(table, (np.zeros(len(table), bool), np.array([k in analysis.traced_steps for k in keys])))
    for rank, group in frame.groupby(st.DEVICE_ID):
        _, used, _ = sm.basis_rows(group)
        assert 0 < len(used) < len(group)
        values = ph.phase_values(used)
        for name in (ph.ITERATION_TIME, ph.DATA_AUG, ph.FP_BP, ph.REFRESH):
            assert got[f"rank {rank}"][cs.text(name)] == round(float(np.nanmedian(values[name])), 1)
    wide = cs.ranks_by_steps(rows, "Iteration Time")
    expected = frame.pivot_table(index=st.DEVICE_ID, columns=st.ITERATION_ID_COL, values=st.ITERATION_TIME, aggfunc="first")
    np.testing.assert_array_equal(wide.to_numpy(dtype=float), expected.to_numpy(dtype=float))
    assert wide.index.tolist() == expected.index.tolist() and wide.columns.tolist() == expected.columns.tolist()


def test_a_large_cluster_page_draws_in_full_the_ranks_the_verdict_names(tmp_path):
    from npu_tf_profiling.reports.view.build import write_view

    ranks = tfo.ALL_RANKS_MAX + 8
    write_cluster(tmp_path, ClusterPlan(ranks=ranks, steps=6, slow={17: ("input", 3000.0)}, binary=True))
    html = write_view(tmp_path).read_text()
    drawn = sorted({int(n) for n in re.findall(r"<h2>[^<]*PROF_\d+_\d+_RANK(\d{4})", html)})
    assert 17 in drawn and 3 <= len(drawn) <= 3 + tfo.NAMED_MAX, drawn
    assert "PROF folders drawn in full: the ranks" in html and "17 (slow: input)" in html
    assert f"{ranks} PROF folders: {len(drawn)} are drawn below" in html
