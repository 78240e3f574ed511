"""The view's top ops of a task-traced window: op_summary's rows, largest Total Time first.

The table is ``op_summary``'s (``reports.task.op_summary``), built from the same
task table as ``op_summary_*.csv``, so the chart and the CSV agree to the digit.
"""
from __future__ import annotations

from typing import Any

from npu_tf_profiling.reports.task import op_summary as ops
from npu_tf_profiling.reports.task.table import TaskTable
from npu_tf_profiling.reports.view.page import Page, text

TOP_OPS = 15
LONGEST_LABEL = 60


def add_top_ops(page: Page, table: TaskTable, model_id: int, top: int = TOP_OPS) -> None:
    """A bar per op of the ``top`` longest in total over the model's traced iterations (nothing if it has none)."""
    frame = ops.op_summary_frame(table)
    frame = frame[frame[ops.MODEL_ID] == model_id].head(top)
    if frame.empty:
        return
    traced = int((table.iterations[table.iterations["model_id"] == model_id]["n_tasks"] > 0).sum())
    page.heading(3, f"Top {len(frame)} ops by total time: device {table.device_id}, Model ID {model_id} "
                    f"({traced} task-traced iteration(s))")
    page.chart(top_ops_figure(frame), height=max(260, 28 * len(frame) + 120))


def top_ops_figure(frame: Any) -> dict[str, Any]:
    """Horizontal bars, longest on top, one per op; hover gives the whole name, type, count, average and Ratio(%).

    Each bar has a position of its own on the axis, its label only as the tick's text: plotly adds up bars
    that share a category, and long names cut to the same label (a VAE's three ``…/Conv2DBackpropFilter``)
    were drawn as one bar. Labels that would still read the same get a ``[k]`` to tell them apart.
    """
    names = _unique_labels([_short(n) for n in frame[ops.OP_NAME]])
    hover = [
        f"{text(name)}<br>{text(op_type)}: {count} runs, avg {avg} µs, {ratio}% of the traced iterations' time"
        for name, op_type, count, avg, ratio in zip(frame[ops.OP_NAME], frame[ops.OP_TYPE], frame[ops.COUNT],
                                                    frame[ops.AVG_TIME], frame[ops.RATIO])
    ]
    positions = list(range(len(names)))[::-1]  # the longest (first row) at the top
    bar = {"type": "bar", "orientation": "h", "y": positions, "x": [float(v) for v in frame[ops.TOTAL_TIME]],
           "hovertext": hover, "hoverinfo": "text", "marker": {"color": "#9467bd"}}
    axis = {"automargin": True, "tickmode": "array", "tickvals": positions, "ticktext": names, "range": [-0.5, len(names) - 0.5]}
    return {"data": [bar], "layout": {"xaxis": {"title": {"text": "Total Time (µs)"}}, "yaxis": axis,
                                      "margin": {"l": 10, "t": 20}, "showlegend": False}}


def _unique_labels(labels: list[str]) -> list[str]:
    """`labels` with a ``[k]`` after the k-th repeat of one (k from 2), so that no two read the same."""
    seen: dict[str, int] = {}
    unique = []
    for label in labels:
        seen[label] = seen.get(label, 0) + 1
        unique.append(label if seen[label] == 1 else f"{label} [{seen[label]}]")
    return unique


def _short(name: str) -> str:
    """An op name for an axis label: escaped, and cut in the middle when long (the hover has it whole)."""
    if len(name) > LONGEST_LABEL:
        name = name[: LONGEST_LABEL // 2 - 1] + "…" + name[-(LONGEST_LABEL // 2):]
    return text(name)
