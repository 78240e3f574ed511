"""`npu-tf-prof view` pages opened in headless Chromium: the charts drew, no JavaScript error, not blank.

Pages: a 3-rank cluster (synthetic, rank 2 slow in input), and a real
2-worker job with a task-traced window (the suite's shared ``two_workers``
run). The demo's page is checked in test_samples.py. The browser runs with
every host name unresolvable, so a page that needed the network would fail.
A first test proves the checks can fail: a page that throws and draws nothing.
"""
from __future__ import annotations

import csv
import re
from pathlib import Path

from npu_tf_profiling.cli import main
from npu_tf_profiling.reports.view.page import RENDERED_ATTRIBUTE
from npu_tf_profiling.testing.cluster_synthetic import ClusterPlan, write_cluster
from tests.helpers.browser import Opened, open_page

MIN_DETAIL = 0.1  # share of screenshot rows with detail; a blank page has 0


def assert_drawn(opened: Opened, charts: int) -> None:
    """Every chart div got plotly's SVG, the page counted them all drawn, nothing was logged as an error."""
    assert opened.errors == [], opened.errors
    assert len(re.findall(r'class="plotly-graph-div[^"]*"', opened.dom)) == charts
    assert opened.dom.count('<svg class="main-svg"') >= charts  # plotly.js draws each chart into SVG
    assert re.search(rf'<html[^>]*{RENDERED_ATTRIBUTE}="\d+"', opened.dom), "the page never finished drawing"
    assert opened.detail_rows > MIN_DETAIL, opened.detail_rows


def test_the_checks_catch_a_script_error_and_a_blank_page(tmp_path) -> None:
    page = tmp_path / "broken.html"
    page.write_text('<!DOCTYPE html><html><body><script>throw new Error("boom")</script></body></html>')
    opened = open_page(page, height=600)
    assert any("boom" in e for e in opened.errors)
    assert opened.detail_rows < 0.01


def test_three_rank_cluster_page(tmp_path, capsys) -> None:
    root = tmp_path / "job"
    write_cluster(root, ClusterPlan(ranks=3, steps=40, slow={2: ("input", 1500.0)}))
    assert main(["view", str(root)]) == 0
    page = Path(capsys.readouterr().out.strip())
    opened = open_page(page, height=3000)
    # cluster: 2 heatmaps + medians; each rank: phases + distribution
    assert_drawn(opened, charts=3 + 3 * 2)
    assert "SLOW RANK 2: cause input" in opened.dom
    assert opened.dom.count('<g class="hm"') == 2  # the two heatmaps' drawn images
    assert opened.dom.count('class="js-fill"') >= 3 * 5  # each rank's stack: 5 filled phases
    for rank in range(3):
        assert f"Device {rank}, Model ID 1: 40 iterations" in opened.dom


def test_task_traced_run_page(two_workers, tmp_path, capsys) -> None:
    out, _ = two_workers
    page = tmp_path / "view.html"
    assert main(["view", str(out), "-o", str(page)]) == 0
    opened = open_page(page, height=3000)
    tops = re.findall(r"Top \d+ ops by total time: device (\d+)", opened.dom)
    assert sorted(set(tops)) == ["0", "1"], tops
    assert_drawn(opened, charts=3 + 2 * 3)  # cluster: 3; each rank: phases, distribution, top ops
    summary = next(out.glob("PROF_*/mindstudio_profiler_output/op_summary_*.csv"))
    with open(summary, newline="") as handle:
        longest = next(csv.DictReader(handle))["Op Name"]
    assert longest[:20] in opened.dom  # the CSV's first op (the longest) is on the chart
