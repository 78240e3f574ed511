"""The view's part for a cluster: ranks × steps heatmaps, the slow-rank verdict, per-rank phase medians.

Input is ``cluster.analysis.analyze_cluster``'s result with the view's columns
(nothing is written): the same per-(step, rank) rows and verdict as
``npu-tf-prof cluster``, never every rank's step table in this process (at
4,096 ranks that was most of the page's time and gigabytes). Medians use the
summary's basis on each rank (steady iterations), less the steps task_trace
disturbed on any rank, as the slow-rank tests do.

A page must open at thousands of ranks: past ``MAX_RANK_ROWS`` ranks a
heatmap row is a bin of consecutive ranks showing their maximum (a slow rank
stays visible), as steps are binned past ``phases.MAX_POINTS``; past
``MAX_RANK_BARS`` ranks the medians are one series per phase over the ranks,
not one bar group per rank.
"""
from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pandas as pd

from npu_tf_profiling.reports.cluster import rank_task as rt
from npu_tf_profiling.reports.cluster import step_table as cst
from npu_tf_profiling.reports.cluster.analysis import ClusterAnalysis
from npu_tf_profiling.reports.step import summary as sm
from npu_tf_profiling.reports.step import table as st
from npu_tf_profiling.reports.view import phases as ph
from npu_tf_profiling.reports.view.model_section import US
from npu_tf_profiling.reports.view.page import Page, text

HEATMAP_METRICS = ((cst.ITERATION_TIME, ph.ITERATION_TIME), (cst.DATA_AUG_BOUND, ph.DATA_AUG))
# Each median phase's column in the analysis rows (the step table's values, as floats).
MEDIAN_PHASES = {ph.ITERATION_TIME: cst.ITERATION_TIME, ph.GETNEXT: rt.GETNEXT_TIME, ph.DATA_AUG: cst.DATA_AUG_BOUND,
                 ph.FP_BP: cst.FP_TO_BP, ph.REDUCE: cst.REDUCE, ph.REFRESH: rt.REFRESH}
MAX_RANK_ROWS = 256
MAX_RANK_BARS = 16


def add_cluster(page: Page, analysis: ClusterAnalysis) -> None:
    """The cluster part; ``analysis`` from ``analyze_cluster(..., view_columns=True)``."""
    page.heading(2, f"Cluster: {len(analysis.ranks)} ranks under {analysis.root}")
    page.preformatted(analysis.report.verdict)
    disturbed = _disturbed(analysis.rows, analysis.traced_steps | analysis.retraced_steps)
    models = analysis.rows[cst.MODEL_ID].to_numpy(dtype="int64")
    for model_id in np.unique(models).tolist():
        # One model's rows: the rows themselves when there is one model (the usual case; millions of rows at
        # thousands of ranks, so no copy of them), a selection otherwise.
        mine = models == model_id
        rows = analysis.rows if mine.all() else analysis.rows[mine]
        page.heading(3, f"Model ID {model_id}: ranks × steps")
        for column, label in HEATMAP_METRICS:
            wide = ranks_by_steps(rows, column)
            binning = ph.Binning.for_length(wide.shape[1])
            note = binning.note("steps")
            if note:
                page.paragraph(note, "note")
            page.chart(heatmap_figure(wide, label, binning), height=max(220, 40 * min(len(wide), 24) + 140))
        page.chart(medians_figure(rows, disturbed[mine]), height=380)


def ranks_by_steps(rows: pd.DataFrame, column: str) -> pd.DataFrame:
    """One model's ``column`` as a ranks x steps table (NaN where unknown), less ranks and steps with no value:
    what ``pivot_table(index=Index, columns=Step, aggfunc="first")`` gives, from one numpy array (a (step,
    rank) pair is one row)."""
    ranks, rank_at = np.unique(rows[cst.INDEX].to_numpy(dtype="int64"), return_inverse=True)
    steps, step_at = np.unique(rows[cst.STEP].to_numpy(dtype="int64"), return_inverse=True)
    values = np.full((len(ranks), len(steps)), np.nan)
    values[rank_at, step_at] = rows[column].to_numpy(dtype="float64", na_value=np.nan)
    known = ~np.isnan(values)
    keep_ranks, keep_steps = known.any(axis=1), known.any(axis=0)
    return pd.DataFrame(values[keep_ranks][:, keep_steps], index=pd.Index(ranks[keep_ranks]), columns=pd.Index(steps[keep_steps]))


def _disturbed(rows: pd.DataFrame, steps: frozenset[tuple[int, int]]) -> np.ndarray:
    """Per row: its (model, step) was task-traced (or right after one), or retraced, on some rank."""
    if not steps:
        return np.zeros(len(rows), dtype=bool)
    keys = pd.MultiIndex.from_arrays([rows[cst.MODEL_ID].to_numpy(dtype="int64"), rows[cst.STEP].to_numpy(dtype="int64")])
    return keys.isin(list(steps))


def heatmap_figure(wide: pd.DataFrame, label: str, binning: ph.Binning) -> dict[str, Any]:
    """Ranks (rows) × steps (columns) of one metric; past ``phases.MAX_POINTS`` steps, bin means; past
    ``MAX_RANK_ROWS`` ranks, the maximum over bins of consecutive ranks."""
    values = wide.to_numpy(dtype="float64", na_value=np.nan)
    steps = wide.columns.to_numpy(dtype="int64")
    z = np.vstack([binning.mean(row) for row in values]) if len(values) else values
    ranks = [int(r) for r in wide.index]
    per_row = -(-len(ranks) // MAX_RANK_ROWS) if len(ranks) > MAX_RANK_ROWS else 1
    if per_row > 1:
        padded = np.full((-(-len(ranks) // per_row) * per_row, z.shape[1]), np.nan)
        padded[: len(z)] = z
        with warnings.catch_warnings():  # an all-NaN bin stays NaN (unknown)
            warnings.simplefilter("ignore", RuntimeWarning)
            z = np.nanmax(padded.reshape(-1, per_row, z.shape[1]), axis=1)
        labels = [f"ranks {ranks[i]}-{ranks[min(i + per_row, len(ranks)) - 1]}" for i in range(0, len(ranks), per_row)]
    else:
        labels = [f"rank {r}" for r in ranks]
    trace = {"type": "heatmap", "z": np.round(z, 1), "x": binning.first(steps), "y": labels, "colorscale": "Viridis",
             "colorbar": {"title": {"text": US}}, "hovertemplate": "%{y}, step %{x}: %{z:,.0f} µs<extra></extra>"}
    title = f"{label} per rank and step" + (f" (means of {binning.size} steps)" if binning.binned else "")
    if per_row > 1:
        title += f" (each row the maximum of {per_row} ranks)"
    return {"data": [trace], "layout": {"title": {"text": title}, "xaxis": {"title": {"text": "Step (Iteration ID)"}},
                                        "yaxis": {"autorange": "reversed"}}}


def medians_figure(rows: pd.DataFrame, disturbed: np.ndarray) -> dict[str, Any]:
    """Each phase's median per rank: bars side by side for a few ranks, one series per phase over many.

    ``rows``: one model's analysis rows; ``disturbed``: per row, left out as task-traced (``_disturbed``);
    each rank's basis is the summary's (``basis_rows``).
    """
    basis = pd.DataFrame({st.ITERATION_TIME: rows[cst.ITERATION_TIME], "_disturbed": disturbed,
                          "_has_previous": rows[rt.HAS_PREVIOUS].astype(bool), cst.INDEX: rows[cst.INDEX]})
    medians: dict[int, dict[str, float]] = {}
    for rank, group in basis.groupby(cst.INDEX, sort=True):
        _, used, _ = sm.basis_rows(group)
        chosen = rows.loc[used.index]
        medians[int(rank)] = {name: _median(chosen[column].to_numpy(dtype="float64")) for name, column in MEDIAN_PHASES.items()}
    shown = [name for name in MEDIAN_PHASES if any(not np.isnan(m[name]) for m in medians.values())]
    title = {"text": "Median of each phase per rank (steady steps)"}
    if len(medians) > MAX_RANK_BARS:
        ranks = list(medians)
        data = [{"type": "scattergl", "mode": "markers", "name": text(n), "x": ranks, "y": [round(medians[r][n], 1) for r in ranks],
                 "hovertemplate": f"{text(n)}, " + "rank %{x}: %{y:,.0f} µs<extra></extra>"} for n in shown]
        return {"data": data, "layout": {"title": title, "xaxis": {"title": {"text": "Rank"}},
                                         "yaxis": {"title": {"text": US}}, "legend": {"orientation": "h", "y": -0.15}}}
    data = [{"type": "bar", "name": f"rank {rank}", "x": [text(n) for n in shown], "y": [round(m[n], 1) for n in shown],
             "hovertemplate": f"rank {rank}, " + "%{x}: %{y:,.0f} µs<extra></extra>"} for rank, m in medians.items()]
    return {"data": data, "layout": {"title": title, "barmode": "group",
                                     "yaxis": {"title": {"text": US}}, "legend": {"orientation": "h", "y": -0.15}}}


def _median(values: np.ndarray) -> float:
    known = values[~np.isnan(values)]
    return float(np.median(known)) if known.size else float("nan")

