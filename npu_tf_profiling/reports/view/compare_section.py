"""The view's comparison part (``npu-tf-prof view BASELINE --compare CANDIDATE``): each phase's two distributions, overlaid.

The numbers are ``npu-tf-prof diff``'s (``reports.diff``): the same iterations
(steady, not task-traced; a cluster's steps as the mean over the ranks both
runs have), the same verdict and table. Each phase gets one chart: the two
histograms on shared bins (so their bars line up), the medians marked.
"""
from __future__ import annotations

from typing import Any

import numpy as np

from npu_tf_profiling.reports.diff.compare import DiffReport, compare_sides
from npu_tf_profiling.reports.diff.render import METHOD
from npu_tf_profiling.reports.diff.sides import read_side, side_of
from npu_tf_profiling.reports.run_input import RunInput
from npu_tf_profiling.reports.view.model_section import US
from npu_tf_profiling.reports.view.page import Page, text
from npu_tf_profiling.reports.view.phases import HISTOGRAM_BINS

SIDE_COLORS = {"baseline": "#1f77b4", "candidate": "#d62728"}


def add_compare(page: Page, found: RunInput, candidate: str) -> DiffReport:
    """The comparison of ``found`` (the baseline) with the run at ``candidate``; returns the diff drawn."""
    report = compare_sides(side_of(found), read_side(candidate))
    page.heading(2, f"Compared with {candidate}")
    page.preformatted(report.verdict)
    page.paragraph(METHOD + f"; threshold {report.threshold_pct:g}% (npu-tf-prof diff --threshold).")
    for note in report.notes:
        page.paragraph(note, "note")
    for model in report.models:
        page.heading(3, f"Model ID {model.model_id}: {model.status}")
        page.table(["phase", f"baseline median ({US})", f"candidate median ({US})", f"baseline p90 ({US})",
                    f"candidate p90 ({US})", "change %", "95% CI %"],
                   [[c.phase, f"{c.baseline_median_us:,.0f}", f"{c.candidate_median_us:,.0f}", f"{c.baseline_p90_us:,.0f}",
                     f"{c.candidate_p90_us:,.0f}", "n/a" if c.change_pct is None else f"{c.change_pct:+.1f}",
                     "n/a" if c.ci_pct is None else f"{c.ci_pct[0]:+.1f}..{c.ci_pct[1]:+.1f}"] for c in model.phases],
                   text_columns=frozenset({0}))
        for note in model.notes:
            page.paragraph(note, "note")
        base = report.baseline.models[model.model_id].pooled(model.ranks)
        cand = report.candidate.models[model.model_id].pooled(model.ranks)
        for change in model.phases:
            page.chart(overlay_figure(change.phase, base[change.phase], cand[change.phase]), height=300)
    return report


def overlay_figure(phase: str, baseline: np.ndarray, candidate: np.ndarray) -> dict[str, Any]:
    """Two histograms of one phase on the same bins, overlaid, each side's median a dashed line."""
    sides = {"baseline": baseline[~np.isnan(baseline)], "candidate": candidate[~np.isnan(candidate)]}
    both = np.concatenate(list(sides.values()))
    bins = max(1, min(HISTOGRAM_BINS, int(np.unique(both).size)))
    edges = np.histogram_bin_edges(both, bins=bins)
    centres, widths = np.round((edges[:-1] + edges[1:]) / 2, 1), np.round(np.diff(edges), 1)
    data, shapes = [], []
    for name, values in sides.items():
        counts, _ = np.histogram(values, bins=edges)
        data.append({"type": "bar", "name": f"{name} ({len(values):,})", "x": centres, "y": counts.tolist(), "width": widths,
                     "opacity": 0.55, "marker": {"color": SIDE_COLORS[name]},
                     "hovertemplate": f"{name}: " + "%{x:.0f} µs: %{y} iterations<extra></extra>"})
        median = float(np.median(values))
        shapes.append({"type": "line", "xref": "x", "yref": "paper", "x0": median, "x1": median, "y0": 0, "y1": 1,
                       "line": {"color": SIDE_COLORS[name], "dash": "dash", "width": 1}})
    return {"data": data, "layout": {"title": {"text": text(f"{phase}: baseline and candidate")}, "barmode": "overlay",
                                     "bargap": 0, "xaxis": {"title": {"text": f"{text(phase)} ({US})"}},
                                     "yaxis": {"title": {"text": "iterations"}}, "shapes": shapes,
                                     "legend": {"orientation": "h", "y": -0.25}}}
