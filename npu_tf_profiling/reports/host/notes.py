"""The host side in words: the lines the reports print and ``summary`` shows per model.

An iteration whose memory peak stands out, and each mstx range that repeats every iteration with its time
per iteration, so a user reading the summary sees what the host did without opening the CSVs.
"""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import pandas as pd

from npu_tf_profiling.reports.host import iterations
from npu_tf_profiling.raw_format.mstx_markers import read_markers
from npu_tf_profiling.reports.host.raw import read_host_samples
from npu_tf_profiling.reports.step import table as st


def memory_notes(peaks: iterations.MemoryPeaks, model: Optional[int] = None) -> list[str]:
    return [f"profile_memory: iteration {iteration} (Model ID {model_id}, device {peaks.device_id}) peaked at "
            f"{value:,.0f} MB of host memory, {value - median:,.0f} MB above the median iteration's {median:,.0f} MB"
            for model_id, iteration, value, median in peaks.standouts() if model is None or model_id == model]


def range_notes(ranges: pd.DataFrame) -> list[str]:
    return [f"mstx range '{row['Message']}' ({row['Domain']}, Model ID {row['Model ID']}): {row['Iterations']} iterations, "
            f"mean {row['Mean(us)']:,.1f} us per iteration (min {row['Min(us)']:,.1f}, max {row['Max(us)']:,.1f}), "
            f"{row['Share(%)']:.1f}% of their time" for _, row in ranges.iterrows()]


def model_notes(device_dir: Path, table: st.StepTraceTable, device_id: int, model_id: int) -> list[str]:
    """What ``summary`` says of one model's host side (nothing when the run recorded no host data)."""
    samples, markers = read_host_samples(device_dir), read_markers(device_dir)
    if samples is None and not markers:
        return []
    spans = iterations.iteration_spans(table, device_id)
    notes: list[str] = []
    if samples is not None:
        peaks = iterations.memory_peaks(samples, spans, device_id)
        if peaks is not None:
            notes += memory_notes(peaks, model_id)
    if markers:
        ranges = iterations.repeating_ranges(markers, spans)
        notes += range_notes(ranges[ranges["Model ID"] == model_id])
    return notes
