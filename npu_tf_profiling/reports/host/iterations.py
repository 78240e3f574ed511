"""The host data per iteration: ``profile_memory``'s peaks, and the mstx ranges that repeat each iteration.

An iteration spans from the previous iteration's end to its own end (the step-trace table's
Iteration Time), FP Start to end for a model's first. A memory sample holds the peak since the
previous sample, so an iteration's peak is the largest over the samples whose interval overlaps it:
exact when iterations are longer than the sampling period; a peak in an interval that straddles two
iterations counts in both (an upper bound, never a miss).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import numpy as np
import pandas as pd

from npu_tf_profiling.raw_format.atomic import atomic_write_text
from npu_tf_profiling.raw_format.mstx_markers import Marker
from npu_tf_profiling.reports.host.raw import HostSamples
from npu_tf_profiling.reports.step import table as st

MB = 1024.0
# An iteration's peak stands out when it exceeds the median by this much and by 5 robust standard deviations.
STANDOUT_MIN_MB = 64.0
STANDOUT_SIGMAS = 5.0
# A range "repeats each iteration" when it falls in at least this share of the iterations.
REPEATS_SHARE = 0.8
MEMORY_HEADER = ["Device_id", "Model ID", "Iteration ID", "Peak Host Memory(MB)", "Peak Device Memory(MB)"]


@dataclass
class Spans:
    """One device's iterations: model, id, start and end (µs), for the rows whose start is known."""

    model: np.ndarray
    iteration: np.ndarray
    start: np.ndarray
    end: np.ndarray


def iteration_spans(table: st.StepTraceTable, device_id: int) -> Spans:
    frame = table.frame[table.frame[st.DEVICE_ID] == device_id]
    end = frame[st.ITERATION_END].astype("float64").to_numpy(na_value=np.nan)
    length = frame[st.ITERATION_TIME].astype("float64").to_numpy(na_value=np.nan)
    fp = frame[st.FP_START].astype("float64").to_numpy(na_value=np.nan)
    previous = table.has_previous[frame.index].to_numpy(dtype=bool)
    start = np.where(previous, end - length, fp)
    keep = np.isfinite(start) & np.isfinite(end)
    return Spans(frame[st.MODEL_ID].to_numpy(dtype="int64")[keep], frame[st.ITERATION_ID_COL].to_numpy(dtype="int64")[keep],
                 start[keep], end[keep])


def _peaks(samples: HostSamples, key: str, spans: Spans) -> np.ndarray:
    values = samples.columns[key]
    lo = np.searchsorted(samples.t_us, spans.start, side="right")
    hi = np.minimum(np.searchsorted(samples.t_us, spans.end, side="left") + 1, len(values))
    out = np.full(len(spans.end), np.nan)
    for i, (a, b) in enumerate(zip(lo, hi)):
        window = values[a:b]
        if window.size and np.isfinite(window).any():
            out[i] = np.nanmax(window)
    return out


@dataclass
class MemoryPeaks:
    device_id: int
    spans: Spans
    host_mb: np.ndarray
    device_mb: Optional[np.ndarray]

    def standouts(self) -> list[tuple[int, int, float, float]]:
        """(model, iteration, peak MB, the model's median MB) of the iterations whose host peak stands out."""
        found = []
        for model in np.unique(self.spans.model):
            rows = (self.spans.model == model) & np.isfinite(self.host_mb)
            values = self.host_mb[rows]
            if values.size < 3:
                continue
            median = float(np.median(values))
            spread = 1.4826 * float(np.median(np.abs(values - median)))
            limit = median + max(STANDOUT_MIN_MB, STANDOUT_SIGMAS * spread)
            for iteration, value in zip(self.spans.iteration[rows], values):
                if value > limit:
                    found.append((int(model), int(iteration), float(value), median))
        return found


def memory_peaks(samples: HostSamples, spans: Spans, device_id: int) -> Optional[MemoryPeaks]:
    if not samples.has("hwm_kb") or not len(spans.end):
        return None
    host = _peaks(samples, "hwm_kb", spans) / MB
    device = _peaks(samples, "dev_peak", spans) / 2**20 if samples.has("dev_peak") else None
    return MemoryPeaks(device_id, spans, host, device)


def write_memory_csv(path: Path, peaks: list[MemoryPeaks]) -> Path:
    lines = [",".join(MEMORY_HEADER)]
    for each in peaks:
        for i in range(len(each.spans.end)):
            host = "N/A" if not np.isfinite(each.host_mb[i]) else f"{each.host_mb[i]:.1f}"
            device = "N/A" if each.device_mb is None or not np.isfinite(each.device_mb[i]) else f"{each.device_mb[i]:.1f}"
            lines.append(f"{each.device_id},{each.spans.model[i]},{each.spans.iteration[i]},{host},{device}")
    atomic_write_text(path, "\n".join(lines) + "\n")
    return path


def repeating_ranges(markers: list[Marker], spans: Spans) -> pd.DataFrame:
    """Per (model, domain, message) of a range found in most iterations: its time per iteration, µs.

    Columns: Model ID, Domain, Message, Iterations (with the range), Mean(us), Min(us), Max(us), Share(%) of the
    iteration time. A range is placed in the iteration holding its start.
    """
    rows = []
    ranges = [m for m in markers if m.kind == "range"]
    for model in np.unique(spans.model):
        mine = spans.model == model
        order = np.argsort(spans.end[mine])
        starts, ends = spans.start[mine][order], spans.end[mine][order]
        per: dict[tuple[str, str], dict[int, float]] = {}
        for marker in ranges:
            k = int(np.searchsorted(ends, marker.start_us, side="left"))
            if k < len(ends) and starts[k] <= marker.start_us:
                totals = per.setdefault((marker.domain, marker.message), {})
                totals[k] = totals.get(k, 0.0) + (marker.end_us - marker.start_us)
        for (domain, message), totals in sorted(per.items()):
            if len(totals) < max(2, REPEATS_SHARE * len(ends)):
                continue
            times = np.array(list(totals.values()))
            share = 100.0 * times.sum() / float((ends - starts)[list(totals)].sum())
            rows.append({"Model ID": int(model), "Domain": domain, "Message": message, "Iterations": len(totals),
                         "Mean(us)": round(float(times.mean()), 1), "Min(us)": round(float(times.min()), 1),
                         "Max(us)": round(float(times.max()), 1), "Share(%)": round(share, 2)})
    return pd.DataFrame(rows, columns=["Model ID", "Domain", "Message", "Iterations", "Mean(us)", "Min(us)", "Max(us)",
                                       "Share(%)"])
