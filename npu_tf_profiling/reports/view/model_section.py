"""The view's part for one PROF folder: per (device, model), the phases, the distribution, the slowest iterations.

Numbers come from the readers the reports use (``prof_dir.load_prof_dir``,
``step.summary``), so the page says what ``step_trace_*.csv`` and
``npu-tf-prof summary`` say; the verdict and notes are the summary's own lines.
Task-traced devices add their top ops (``task_section``).
"""
from __future__ import annotations

from typing import Any, Optional

import numpy as np

from npu_tf_profiling.reports.anomalies import render_anomaly
from npu_tf_profiling.reports.prof_dir import ProfData
from npu_tf_profiling.reports.advise.engine import top_finding_line, with_capture_advice
from npu_tf_profiling.reports.step import summary as sm
from npu_tf_profiling.reports.step.between import load_other_runs, row_causes
from npu_tf_profiling.reports.step import table as st
from npu_tf_profiling.reports.task.table import TaskTable
from npu_tf_profiling.reports.view import phases as ph
from npu_tf_profiling.reports.view.host_section import add_memory_chart
from npu_tf_profiling.reports.view.page import Page, text
from npu_tf_profiling.reports.view.task_section import add_top_ops

# One colour per phase on every chart of the page (plotly's default palette, fixed so a phase keeps its colour).
COLORS = {
    ph.GETNEXT: "#17becf", ph.DATA_AUG: "#1f77b4", f"{ph.DATA_AUG} (rest)": "#1f77b4", ph.FP_BP: "#ff7f0e",
    f"{ph.FP_BP} (rest)": "#ff7f0e", ph.REDUCE: "#d62728", ph.REFRESH: "#2ca02c", f"{ph.REFRESH} (rest)": "#2ca02c",
    ph.ITERATION_TIME: "#333333",
}
US = "µs"
SCALE_HEADROOM = 1.15  # above the statistics' longest iteration, when the phases chart is cut (`_scale_for`)
MAX_NAMED_ABOVE = 3


def add_prof_dir(page: Page, data: ProfData, tasks: dict[int, TaskTable], heading: Optional[str] = None) -> None:
    """Every (device, model) of ``data``; ``tasks``: device id -> its task table (task-traced devices only)."""
    page.heading(2, heading or str(data.prof_dir))
    summary = with_capture_advice(sm.summarize_prof_data(data), data)
    if summary.skipped_lines:
        page.paragraph(f"{summary.skipped_lines} unreadable raw line(s) skipped (torn or corrupt).", "note")
    advice = top_finding_line(data)  # `npu-tf-prof advise`'s best finding heads the folder's charts
    if advice:
        page.paragraph(advice)
    frame = sm.annotated(data)
    by_key = {(m.device_id, m.model_id): m for m in summary.models}
    devices = {d.device_id: d for d in data.devices}
    for (device_id, model_id), rows in frame.groupby([st.DEVICE_ID, st.MODEL_ID], sort=True):
        model = by_key[(int(device_id), int(model_id))]
        device = devices.get(int(device_id))
        runs = load_other_runs(device.device_dir, device.info) if device is not None else None
        anomalies = [a for a in summary.anomalies if (a.get("device_id"), a.get("model_id")) == (int(device_id), int(model_id))]
        add_model(page, model, rows, row_causes(rows, runs), anomalies)
        if device is not None:
            add_memory_chart(page, device.device_dir, data.table, int(device_id), int(model_id))
        table = tasks.get(int(device_id))
        if table is not None:
            add_top_ops(page, table, int(model_id))


def add_model(page: Page, model: sm.ModelSummary, rows: Any, causes: Optional[list[str]] = None,
              anomalies: Optional[list[dict[str, Any]]] = None) -> None:
    """The charts and text of one model (``rows``: its ``summary.annotated_frame`` rows; ``causes``: per row,
    the other runs its Data Aug Bound held, ``between.row_causes``; ``anomalies``: its anomaly_capture
    anomalies, marked on the phases chart and listed as the summary lists them)."""
    page.heading(3, f"Device {model.device_id}, Model ID {model.model_id}: {model.iterations:,} iterations "
                    f"(Iteration ID {model.first_iteration_id}..{model.last_iteration_id})")
    page.preformatted("\n".join(model.render_lines() + [line for a in anomalies or [] for line in render_anomaly(a)]))
    values = ph.phase_values(rows)
    ids = rows[st.ITERATION_ID_COL].astype("int64").to_numpy()
    binning = ph.Binning.for_length(len(ids))
    note = binning.note()
    if note:
        page.paragraph(note + " The 'slowest in bin' line is each bin's largest Iteration Time; the distribution, "
                       "percentiles and slowest iterations below use every iteration.", "note")
    _, used, _ = sm.basis_rows(rows)
    reasons = _reasons(rows, causes or [""] * len(ids))
    y_max = _scale_for(page, ids, values[ph.ITERATION_TIME], ph.phase_values(used)[ph.ITERATION_TIME], reasons)
    page.chart(phases_figure(ids, values, binning, y_max, anomalies or []))
    basis = "steady iterations" if model.basis == sm.BASIS_STEADY else "all timed iterations"
    dist = ph.distribution(ph.phase_values(used)[ph.ITERATION_TIME])
    if dist is not None:
        page.chart(distribution_figure(dist, basis), height=340)
    slow = ph.slowest(used[st.ITERATION_ID_COL].astype("int64").to_numpy(), ph.phase_values(used))
    if slow:
        add_slowest(page, slow, basis)


def _reasons(rows: Any, causes: list[str]) -> list[str]:
    """Per row, why it may run long: a retrace of its step, the other runs in its gap (a validation pass),
    its first-iteration set-up, or task_trace; "" when nothing recorded says."""
    first = ~rows["_has_previous"].to_numpy()
    traced, disturbed, retraced = rows["_traced"].to_numpy(), rows["_disturbed"].to_numpy(), rows["_retraced"].to_numpy()
    reasons = []
    for i, cause in enumerate(causes):
        extra = ("the first iteration's set-up" if first[i] else "task-traced" if traced[i]
                 else "right after a task-traced one" if disturbed[i] else "")
        reasons.append("; ".join(part for part in (retraced[i], cause, extra) if part))
    return reasons


def _scale_for(page: Page, ids: np.ndarray, times: np.ndarray, basis_times: np.ndarray,
               reasons: list[str]) -> Optional[float]:
    """The phases chart's height: the statistics' iterations', when others are over twice as long and
    would flatten the rest; the page names the ones cut, each with what it held (`_reasons`)."""
    basis = basis_times[np.isfinite(basis_times)]
    if not len(basis):
        return None
    top = float(basis.max()) * SCALE_HEADROOM
    above = np.flatnonzero(np.nan_to_num(times, nan=0.0) > 2 * float(basis.max()))
    if not len(above):
        return None
    shown = ", ".join(f"Iteration ID {ids[i]}: {times[i]:,.0f} {US} ({reasons[i] or 'no other run recorded in its gap: host time'})"
                      for i in above[:MAX_NAMED_ABOVE])
    more = f", and {len(above) - MAX_NAMED_ABOVE} more" if len(above) > MAX_NAMED_ABOVE else ""
    page.paragraph(f"The phases chart is scaled to the steady iterations (up to {top:,.0f} {US}); "
                   f"{len(above)} iteration(s) run past it: {shown}{more}. Drag on the axis to see them.", "note")
    return top


def phases_figure(ids: np.ndarray, values: dict[str, np.ndarray], binning: ph.Binning,
                  y_max: Optional[float] = None, anomalies: Optional[list[dict[str, Any]]] = None) -> dict[str, Any]:
    """The phases stacked over Iteration ID, with the Iteration Time line on top (cut at `y_max` when given),
    and each anomaly's slow iterations shaded (`anomalies`: ``reports.anomalies`` entries)."""
    x = binning.first(ids)
    data: list[dict[str, Any]] = []
    for label, part in ph.segments(values).items():
        data.append({
            "type": "scatter", "mode": "lines", "name": text(label), "x": x, "y": _rounded(binning.mean(part)),
            "stackgroup": "phases", "line": {"shape": "hv", "width": 0.5, "color": COLORS[label]},
        })
    data.append({"type": "scatter", "mode": "lines", "name": ph.ITERATION_TIME, "x": x,
                 "y": _rounded(binning.mean(values[ph.ITERATION_TIME])), "line": {"shape": "hv", "width": 1, "color": COLORS[ph.ITERATION_TIME]}})
    if binning.binned:
        data.append({"type": "scatter", "mode": "lines", "name": "slowest in bin", "x": x,
                     "y": _rounded(binning.max(values[ph.ITERATION_TIME])), "line": {"width": 1, "dash": "dot", "color": "#888"}})
    title = "Phases of each iteration" + (f" (means of {binning.size} iterations)" if binning.binned else "")
    marks = anomaly_marks(anomalies or [])
    return {"data": data, "layout": {"title": {"text": title}, "xaxis": {"title": {"text": "Iteration ID"}}, **marks,
                                     "yaxis": {"title": {"text": US}, "rangemode": "tozero",
                                               **({"range": [0, y_max]} if y_max is not None else {})},
                                     "hovermode": "x unified",
                                     "legend": {"orientation": "h", "y": -0.2}}}


def anomaly_marks(anomalies: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    """Plotly shapes and labels shading each anomaly's first..last slow iteration (the captured ones named)."""
    shapes, annotations = [], []
    for a in anomalies:
        first, last = a.get("first_slow"), a.get("last_slow")
        if not isinstance(first, int) or not isinstance(last, int):
            continue
        shapes.append({"type": "rect", "xref": "x", "yref": "paper", "x0": first - 0.5, "x1": last + 0.5, "y0": 0, "y1": 1,
                       "fillcolor": COLORS[ph.REDUCE], "opacity": 0.15, "line": {"width": 0}})
        label = "anomaly" + (", captured" if a.get("captured") else "") + ("" if a.get("persisted", True) else ", a spike")
        annotations.append({"x": first, "y": 1, "xref": "x", "yref": "paper", "yanchor": "bottom", "showarrow": False,
                            "text": text(label), "font": {"size": 10, "color": COLORS[ph.REDUCE]}})
    return {"shapes": shapes, "annotations": annotations} if shapes else {}


def distribution_figure(dist: ph.Distribution, basis: str) -> dict[str, Any]:
    """A histogram of Iteration Time with p50/p90/p99 marked."""
    edges = np.asarray(dist.edges)
    bar = {"type": "bar", "x": _rounded((edges[:-1] + edges[1:]) / 2), "y": dist.counts, "width": _rounded(np.diff(edges)),
           "marker": {"color": COLORS[ph.DATA_AUG]}, "name": "iterations", "hovertemplate": "%{x:.0f} µs: %{y} iterations<extra></extra>"}
    shapes, annotations = [], []
    for row, (p, value) in enumerate(dist.percentiles.items()):
        shapes.append({"type": "line", "xref": "x", "yref": "paper", "x0": value, "x1": value, "y0": 0, "y1": 1,
                       "line": {"color": "#d62728", "dash": "dash", "width": 1}})
        annotations.append({"x": value, "y": 1 - 0.08 * row, "xref": "x", "yref": "paper", "yanchor": "bottom", "showarrow": False,  # staggered: close percentiles stay readable
                            "text": f"p{p} {value:,.0f} {US}", "font": {"size": 11, "color": "#d62728"}})
    title = f"Iteration Time distribution ({dist.iterations:,} {basis})"
    return {"data": [bar], "layout": {"title": {"text": title}, "xaxis": {"title": {"text": f"Iteration Time ({US})"}},
                                      "yaxis": {"title": {"text": "iterations"}}, "shapes": shapes, "annotations": annotations,
                                      "bargap": 0, "showlegend": False}}


def add_slowest(page: Page, slow: list[ph.SlowIteration], basis: str) -> None:
    """The slowest iterations, each with the phase that grew most over its median."""
    names = list(slow[0].phases)
    page.paragraph(f"The {len(slow)} slowest {basis}; 'dominated by' is the phase furthest above its median.")
    rows = []
    for it in slow:
        dominant = "no phase above its median" if it.dominant is None else f"{it.dominant} (+{it.excess_us:,.0f} {US})"
        rows.append([it.iteration_id, f"{it.iteration_time_us:,.0f}"]
                    + [st.NA if it.phases[n] is None else f"{it.phases[n]:,.0f}" for n in names] + [dominant])
    header = ["Iteration ID", f"Iteration Time ({US})"] + [f"{n} ({US})" for n in names] + ["dominated by"]
    page.table(header, rows, text_columns=frozenset({len(header) - 1}))


def _rounded(values: np.ndarray) -> np.ndarray:
    """µs to 0.1 µs: the page carries no digits the clock does not have."""
    return np.round(np.asarray(values, dtype="float64"), 1)
