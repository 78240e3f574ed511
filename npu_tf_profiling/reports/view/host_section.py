"""The view's memory chart per model: ``profile_memory``'s peak host (and GPU) memory per iteration.

Drawn from the same numbers as ``step_memory_<ts>.csv`` (``reports.host.iterations``); nothing is drawn for a
run without ``profile_memory``.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np

from npu_tf_profiling.reports.host import iterations
from npu_tf_profiling.reports.host.raw import read_host_samples
from npu_tf_profiling.reports.step import table as st
from npu_tf_profiling.reports.view.page import Page


def add_memory_chart(page: Page, device_dir: Path, table: st.StepTraceTable, device_id: int, model_id: int) -> None:
    samples = read_host_samples(device_dir)
    if samples is None:
        return
    peaks = iterations.memory_peaks(samples, iterations.iteration_spans(table, device_id), device_id)
    if peaks is None:
        return
    mine = peaks.spans.model == model_id
    if not mine.any():
        return
    ids = peaks.spans.iteration[mine].tolist()
    series = [("Peak Host Memory(MB)", peaks.host_mb[mine])]
    if peaks.device_mb is not None:
        series.append(("Peak Device Memory(MB)", peaks.device_mb[mine]))
    data: list[dict[str, Any]] = [
        {"type": "scatter", "mode": "lines+markers", "name": name, "x": ids,
         "y": [None if not np.isfinite(v) else round(float(v), 1) for v in values],
         "hovertemplate": "Iteration %{x}: %{y:,.1f} MB<extra></extra>"}
        for name, values in series]
    layout = {"title": {"text": "Peak memory per iteration (profile_memory)"},
              "xaxis": {"title": {"text": "Iteration ID"}}, "yaxis": {"title": {"text": "MB"}}}
    page.chart({"data": data, "layout": layout}, height=340)
