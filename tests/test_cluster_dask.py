"""The cluster analysis at scale: the same results on a real Dask cluster, timelines in files that open, a short verdict.

* A ``distributed.LocalCluster`` of 2 worker *processes* over loopback runs the
  per-rank and timeline tasks: every file equals the in-process run's.
* Past ``timeline_files.MAX_ROWS_PER_FILE`` rows the merged timeline is one file
  per host and group of ranks: each a valid trace, every rank in exactly one.
* The console verdict stays under 40 lines at 2,000 ranks, the slow rank named,
  every rank still in slow_rank.json.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from npu_tf_profiling.cli import main
from npu_tf_profiling.reports.encoders.chrome_trace import validate_chrome_trace
from npu_tf_profiling.reports.cluster import slow_rank as sr
from npu_tf_profiling.reports.cluster import step_table as cst
from npu_tf_profiling.reports.cluster import timeline as ctl
from npu_tf_profiling.reports.cluster import timeline_files as tlf
from npu_tf_profiling.reports.cluster.analysis import write_cluster_analysis
from npu_tf_profiling.testing.cluster_synthetic import ClusterPlan, write_cluster

distributed = pytest.importorskip("distributed")

OUT = "npu_tf_prof_cluster"
# Two hosts with different clocks (the alignment runs), one slow rank, binary frames.
PLAN = ClusterPlan(ranks=6, steps=25, groups=2, slow={4: ("input", 3000.0)}, hosts={r: f"node{r // 3}" for r in range(6)},
                   clock_offset_us={3: 5000.0, 4: 5000.0, 5: 5000.0}, binary=True)


def _files(out: Path) -> dict[str, bytes]:
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}


def test_a_local_dask_cluster_of_worker_processes_gives_the_same_files(tmp_path, monkeypatch, capsys):
    write_cluster(tmp_path / "job", PLAN)
    monkeypatch.setattr(tlf, "MAX_ROWS_PER_FILE", 60)  # 25 rows per rank: two files per host
    local = write_cluster_analysis(tmp_path / "job", tmp_path / "local")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                  dashboard_address=None, silence_logs=40) as cluster:
        assert main(["cluster", str(tmp_path / "job"), "--output-dir", str(tmp_path / "dask"),
                     "--scheduler", cluster.scheduler_address]) == 0
    printed = capsys.readouterr().out
    assert "SLOW RANK 4: cause input" in printed
    assert local.alignment.mode != "none" and any(local.alignment.shifts_us.values())
    here, there = _files(tmp_path / "local"), _files(tmp_path / "dask")
    assert sorted(here) == sorted(there)
    assert here[cst.CSV_NAME] == there[cst.CSV_NAME]
    assert sorted(k for k in here if k.startswith(tlf.FOLDER_NAME + "/")) == [
        f"{tlf.FOLDER_NAME}/node0_ranks_0-1.json", f"{tlf.FOLDER_NAME}/node0_ranks_2-2.json",
        f"{tlf.FOLDER_NAME}/node1_ranks_3-4.json", f"{tlf.FOLDER_NAME}/node1_ranks_5-5.json"]
    assert ctl.JSON_NAME not in here
    assert here == there


def test_the_csv_merged_from_rank_lines_equals_the_whole_table(tmp_path):
    """The ranks' own CSV lines, merged, are what the one-table CSV writer gives (missing steps included)."""
    from npu_tf_profiling.reports.cluster.data import load_cluster

    write_cluster(tmp_path, ClusterPlan(ranks=5, steps=12, groups=3, drop={1: {3, 4}, 4: {12}}, binary=True))
    write_cluster_analysis(tmp_path)
    whole = cst.to_csv(cst.cluster_step_trace_time(load_cluster(tmp_path).table))
    assert (tmp_path / OUT / cst.CSV_NAME).read_text() == whole


def test_a_large_timeline_is_one_valid_file_per_host_group_and_no_event_is_lost(tmp_path, monkeypatch):
    write_cluster(tmp_path, ClusterPlan(ranks=5, steps=20, hosts={0: "a", 1: "a", 2: "b", 3: "b", 4: "b"}, binary=True))
    write_cluster_analysis(tmp_path)
    whole = json.loads((tmp_path / OUT / ctl.JSON_NAME).read_text())
    monkeypatch.setattr(tlf, "MAX_ROWS_PER_FILE", 45)
    analysis = write_cluster_analysis(tmp_path)
    assert not (tmp_path / OUT / ctl.JSON_NAME).exists()  # the single file of the earlier run is not left stale
    parts = sorted((tmp_path / OUT / tlf.FOLDER_NAME).glob("*.json"))
    assert [p.name for p in parts] == ["a_ranks_0-1.json", "b_ranks_2-3.json", "b_ranks_4-4.json"]
    assert set(parts) <= set(analysis.paths)
    merged = []
    for part in parts:
        events = json.loads(part.read_text())
        assert validate_chrome_trace(events) == []
        merged.extend(events)
    key = lambda e: json.dumps(e, sort_keys=True)  # noqa: E731
    assert sorted(map(key, merged)) == sorted(map(key, whole))


def test_the_verdict_stays_short_at_2000_ranks():
    """2,000 ranks x 30 steps of rank rows (as the per-rank tasks return them): rank 1234 slow in input,
    rank 77 makes the others wait, 300 ranks lack steps, 50 notes."""
    ranks, steps = 2000, 30
    rng = np.random.default_rng(3)
    aug = 300 + 15 * rng.standard_normal((steps, ranks))
    aug[:, 1234] += 3000
    fpbp = 2000 + 100 * rng.standard_normal((steps, ranks))
    reduce = 800 + 50 * rng.standard_normal((steps, ranks))
    reduce[:, 77] = 100
    step_ids, rank_ids = np.meshgrid(np.arange(1, steps + 1), np.arange(ranks), indexing="ij")
    rows = pd.DataFrame({cst.MODEL_ID: 1, cst.STEP: step_ids.ravel(), cst.INDEX: rank_ids.ravel(),
                         cst.DATA_AUG_BOUND: aug.ravel(), cst.FP_TO_BP: fpbp.ravel(), cst.REDUCE: reduce.ravel(),
                         cst.ITERATION_TIME: (aug + fpbp + reduce + 200).ravel(), cst.PREPARING: 30.0,
                         cst.COMM_NOT_OVERLAPPED: reduce.ravel(), cst.OVERLAPPED: 0.0})
    lacking = (rows[cst.INDEX] >= 1500) & (rows[cst.INDEX] < 1800) & (rows[cst.STEP] > 20)
    rows = rows[~lacking].reset_index(drop=True)
    notes = [f"rank {r}: a note" for r in range(50)]
    report = sr.analyze(rows, list(range(ranks + 5)), hosts=[f"node{h}" for h in range(250)], notes=notes)
    report.verdict = sr.render_text(report)
    lines = report.verdict.splitlines()
    assert len(lines) <= 40, report.verdict
    assert max(map(len, lines)) < 1000
    assert "SLOW RANK 1234: cause input" in report.verdict
    assert "SLOW RANK 77" in report.verdict
    whole = json.loads(report.to_json())
    assert len(whole["wait"]["ranks"]) == ranks and len(whole["input"]["ranks"]) == ranks
    assert len(whole["missing_steps"]["models"]["1"]["ranks"]) == 300 + 5  # and the 5 ranks without any record
    assert len(whole["notes"]) == 50


@pytest.mark.parametrize("scheduler", ["threads", "processes"])
def test_the_local_pools_give_the_same_files(tmp_path, capsys, scheduler):
    """``--scheduler threads|processes``: Dask's local scheduler with a pool of threads or processes (no server),
    the same files as the default (one task at a time, in this process)."""
    write_cluster(tmp_path / "job", PLAN)
    assert main(["cluster", str(tmp_path / "job"), "--output-dir", str(tmp_path / "sync")]) == 0
    assert main(["cluster", str(tmp_path / "job"), "--output-dir", str(tmp_path / "pool"), "--scheduler", scheduler]) == 0
    assert capsys.readouterr().out.count("SLOW RANK 4: cause input") == 2
    assert _files(tmp_path / "sync") == _files(tmp_path / "pool")


def test_the_charts_page_bins_4096_ranks_and_keeps_a_slow_rank_visible():
    from npu_tf_profiling.reports.view import cluster_section as cs
    from npu_tf_profiling.reports.view import phases as ph

    ranks, steps = 4096, 1000
    values = np.full((ranks, steps), 1000.0)
    values[3001, 500] = 9000.0  # one slow step on one rank
    wide = pd.DataFrame(values, index=pd.Index(range(ranks)), columns=pd.Index(range(1, steps + 1)))
    figure = cs.heatmap_figure(wide, "Iteration Time", ph.Binning.for_length(steps))
    trace = figure["data"][0]
    z = np.asarray(trace["z"])
    assert z.shape[0] == cs.MAX_RANK_ROWS and len(trace["y"]) == cs.MAX_RANK_ROWS
    assert z.shape[1] <= ph.MAX_POINTS
    row = 3001 // (ranks // cs.MAX_RANK_ROWS)
    assert trace["y"][row] == "ranks 2992-3007"
    assert z[row].max() > z.min()  # the bin's maximum keeps the slow rank in view
    assert "maximum of 16 ranks" in figure["layout"]["title"]["text"]


@pytest.mark.parametrize("seed", range(6))
def test_medians_without_each_equal_the_one_by_one_medians(seed):
    """The O(n log n) leave-one-out medians the 2,000-rank verdict relies on, against np.delete + nanmedian."""
    from npu_tf_profiling.reports.cluster.slow_rank.common import medians_without_each, nanmedian

    rng = np.random.default_rng(seed)
    values = rng.integers(0, 6, size=int(rng.integers(1, 12))).astype(float)  # repeats on purpose
    values[rng.random(len(values)) < 0.3] = np.nan
    expected = np.array([nanmedian(np.delete(values, j)) if len(values) > 1 else np.nan for j in range(len(values))])
    np.testing.assert_array_equal(medians_without_each(values), expected)


def test_a_large_table_is_sliced_between_steps_and_no_row_is_lost(tmp_path, monkeypatch):
    from npu_tf_profiling.reports.cluster import csv_files

    write_cluster(tmp_path, ClusterPlan(ranks=4, steps=30, groups=2, drop={2: {7}}, binary=True))
    write_cluster_analysis(tmp_path)
    whole = (tmp_path / OUT / cst.CSV_NAME).read_text().splitlines()
    header, rows = whole[0], whole[1:]
    budget = 2_000
    monkeypatch.setattr(csv_files, "SLICE_BYTES", budget)
    analysis = write_cluster_analysis(tmp_path)
    assert not (tmp_path / OUT / cst.CSV_NAME).exists()  # the earlier single file is not left stale
    slices = [tmp_path / OUT / csv_files.slice_name(n) for n in range(len(list((tmp_path / OUT).glob("*_slice_*.csv"))))]
    assert len(slices) > 2 and set(slices) <= set(analysis.paths)
    joined, last_steps = [], []
    for path in slices:
        lines = path.read_text().splitlines()
        assert lines[0] == header and path.stat().st_size <= budget
        joined.extend(lines[1:])
        last_steps.append(int(lines[-1].split(",")[0]))
    assert joined == rows
    firsts = [int(p.read_text().splitlines()[1].split(",")[0]) for p in slices[1:]]
    assert all(first == last + 1 for first, last in zip(firsts, last_steps))  # cut between steps, never inside one


def test_without_dask_the_command_says_how_to_install_it(tmp_path, monkeypatch, capsys):
    import sys

    write_cluster(tmp_path, ClusterPlan(ranks=2, steps=5))
    monkeypatch.setitem(sys.modules, "dask", None)  # import dask raises ImportError, as when it is not installed
    assert main(["cluster", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "runs on Dask, which is not installed" in err and "pip install 'npu_tf_profiling[cluster]'" in err


def test_no_timeline_fragment_is_left_behind(tmp_path):
    write_cluster(tmp_path, ClusterPlan(ranks=3, steps=10, binary=True))
    write_cluster_analysis(tmp_path)
    assert not (tmp_path / OUT / tlf.FRAGMENTS_DIR).exists()
    assert sorted(p.name for p in (tmp_path / OUT).iterdir()) == sorted([cst.CSV_NAME, sr.JSON_NAME, sr.TEXT_NAME, ctl.JSON_NAME])
