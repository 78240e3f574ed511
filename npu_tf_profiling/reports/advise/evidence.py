"""What one model's rules read: its summary (shares, the gap between steps split by cause), its rows'
windows, the call sites and the host truth of its device folder.

Every figure comes from the same statistics `summary` prints (steady,
undisturbed iterations), so advice and summary never disagree on a share.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from npu_tf_profiling.raw_format import layout
from npu_tf_profiling.raw_format.call_sites import CALL_SITES_FILE, CallSites, read_call_sites
from npu_tf_profiling.raw_format.other_runs import RETRACE, OtherRuns, read_other_runs
from npu_tf_profiling.raw_format.run_info import RunInfo
from npu_tf_profiling.reports.advise.host_truth import HostTruth, read_host_truth
from npu_tf_profiling.reports.prof_dir import ProfData
from npu_tf_profiling.reports.step.between import without_retraces
from npu_tf_profiling.reports.step import table as st
from npu_tf_profiling.reports.step.summary import (SHARE_DATA_AUG, SHARE_GETNEXT, ModelSummary, annotated, basis_rows,
                                                   summarize_prof_data)
from npu_tf_profiling.reports.step.windows import inside


@dataclass
class ModelEvidence:
    summary: ModelSummary
    rows: pd.DataFrame  # the basis rows (steady, undisturbed)
    info: RunInfo
    sites: CallSites
    truth: HostTruth
    retraces: tuple[int, float]  # (count, total µs) of other_runs' "retrace" records
    runs: tuple[np.ndarray, np.ndarray] = (np.zeros(0), np.zeros(0))  # every other run's span (µs): not host time
    other_runs: OtherRuns | None = None  # the runs between iterations, with their kinds (None: not recorded)

    @property
    def total_us(self) -> float:
        return float(self.rows[st.ITERATION_TIME].astype("float64").sum())

    @property
    def is_function(self) -> bool:
        return "function" in self.info.models.get(str(self.summary.model_id), {})

    @property
    def device_kind(self) -> str:
        return self.info.device_kind or "CPU"

    def share(self, name: str) -> float:
        return self.summary.shares.get(name) or 0.0

    def input_share(self) -> float:
        """GetNext Time's share, else the runs fetching the input (a fed batch); 0 when not measured."""
        if self.summary.shares.get(SHARE_GETNEXT) is not None:
            return self.share(SHARE_GETNEXT)
        split = self.summary.between or {}
        return split.get("input_share") or 0.0

    def host_share(self) -> float:
        """The gap between steps that is neither input nor a recorded run: the script's Python (and GC)."""
        split = self.summary.between
        if split is not None:
            return split["host_share"]
        return max(0.0, self.share(SHARE_DATA_AUG) - self.input_share())

    def windows(self) -> tuple[np.ndarray, np.ndarray]:
        """Each basis row's between-steps window [previous end, FP Start] in µs (rows without one left out)."""
        fp = self.rows[st.FP_START].astype("float64").to_numpy(dtype="float64", na_value=np.nan)
        dab = self.rows[st.DATA_AUG_BOUND].astype("float64").to_numpy(dtype="float64", na_value=np.nan)
        known = np.isfinite(fp) & np.isfinite(dab)
        return fp[known] - dab[known], fp[known]

    def span(self) -> tuple[float, float]:
        """From the first basis iteration's start to the last one's end (µs)."""
        end = self.rows[st.ITERATION_END].astype("float64")
        time = self.rows[st.ITERATION_TIME].astype("float64")
        return float((end - time).min()), float(end.max())


    def host_windows(self) -> tuple[np.ndarray, np.ndarray]:
        """The between-steps windows less the other runs' spans and the GetNext waits: where the script's own Python ran."""
        starts, ends = self.windows()
        gn_start, gn_end = (self.rows[c].astype("float64").to_numpy(dtype="float64", na_value=np.nan)
                            for c in (st.GETNEXT_START, st.GETNEXT_END))
        waits = np.isfinite(gn_start) & np.isfinite(gn_end)
        cut_starts = np.concatenate([self.runs[0], gn_start[waits]])
        cut_ends = np.concatenate([self.runs[1], gn_end[waits]])
        if not len(cut_starts):
            return starts, ends
        edges = np.sort(np.concatenate([starts, ends, cut_starts, cut_ends]))
        middles = (edges[:-1] + edges[1:]) / 2
        keep = inside(middles, starts, ends) & ~inside(middles, cut_starts, cut_ends) & (edges[1:] > edges[:-1])
        return edges[:-1][keep], edges[1:][keep]


_Runs = tuple[tuple[int, float], tuple[np.ndarray, np.ndarray], OtherRuns | None]


def _runs(device_dir: Path, info: RunInfo) -> _Runs:
    """The retraces (count, µs), every run's span, and the runs between iterations (None where not recorded)."""
    runs = read_other_runs(device_dir / layout.DATA_DIR / layout.OTHER_RUNS_FILE)
    mine = np.asarray(runs.kinds, dtype=object) == RETRACE
    retraces = int(mine.sum()), float((runs.ends[mine] - runs.starts[mine]).sum()) if mine.any() else 0.0
    return retraces, (runs.starts, runs.ends), without_retraces(runs) if info.other_runs_recorded else None


def model_evidence(data: ProfData) -> list[ModelEvidence]:
    """One ModelEvidence per (device, model) with steady statistics, in the summary's order."""
    summary = summarize_prof_data(data, with_anomalies=False)
    frame = annotated(data) if summary.models else None  # the summary's basis: retraced iterations left out
    devices = {d.device_id: d for d in data.devices}
    cache: dict[int, tuple[CallSites, HostTruth, _Runs]] = {}
    out = []
    for m in summary.models:
        device = devices.get(m.device_id)
        if device is None or frame is None or m.basis_iterations == 0:
            continue
        if m.device_id not in cache:
            folder = Path(device.device_dir)
            cache[m.device_id] = (read_call_sites(folder / layout.DATA_DIR / CALL_SITES_FILE), read_host_truth(folder),
                                  _runs(folder, device.info))
        sites, truth, (retraces, runs, between_runs) = cache[m.device_id]
        rows = frame[(frame[st.DEVICE_ID] == m.device_id) & (frame[st.MODEL_ID] == m.model_id)]
        out.append(ModelEvidence(m, basis_rows(rows)[1], device.info, sites, truth, retraces, runs, between_runs))
    return out
