"""The numbers the view draws for one model: phase segments, bins, the distribution, the slowest iterations.

Everything is computed here, in numpy, from the step-trace table (the CSV's
numbers), so the page holds only what it draws and opens fast however long
the run was:

* **segments** stack to the Iteration Time. Data Aug Bound, FP to BP and
  Iteration Refresh tile an iteration (``reports.step.summary``); GetNext
  normally lies inside Data Aug Bound, and the all-reduces inside FP to BP
  (reduces that overlap the backward pass) or Iteration Refresh (after BP End,
  as upstream places BP). So the stack shows GetNext and "Data Aug Bound
  (rest)", and Reduce (the union of the groups' intervals inside FP Start ->
  Iteration End, ``cluster.step_table.union_length``, as the cluster's
  Communication column) with "FP to BP (rest)" and "Iteration Refresh (rest)":
  nothing is counted twice. A negative phase (rows that overlap, see the
  style table of docs/tf2.md) stacks as 0;
* **bins**: past ``MAX_POINTS`` iterations the series is cut into
  ``TARGET_BINS`` runs of consecutive iterations and each point is a bin's
  mean (so the stack still sums to the mean Iteration Time) with a line for
  each bin's slowest iteration, so a spike is never averaged away. The page
  says so (``Binning.note``);
* **distribution, percentiles, slowest iterations** use every iteration of the
  summary's basis (``summary.basis_rows``: steady, not task-traced), never bins.
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Callable, Optional

import numpy as np
import pandas as pd

from npu_tf_profiling.reports.cluster.step_table import union_length
from npu_tf_profiling.reports.step import table as st

MAX_POINTS = 10_000  # iterations drawn one by one; past this, bins
TARGET_BINS = 5_000
HISTOGRAM_BINS = 60
SLOWEST = 10
PERCENTILES = (50, 90, 99)

GETNEXT = "GetNext"
DATA_AUG = "Data Aug Bound"
FP_BP = "FP to BP"
REDUCE = "Reduce"
REFRESH = "Iteration Refresh"
ITERATION_TIME = "Iteration Time"
REDUCE_IN_FP_BP = "_reduce in FP to BP"
REDUCE_IN_REFRESH = "_reduce in Iteration Refresh"
PHASE_COLUMNS = {GETNEXT: st.GETNEXT_TIME, DATA_AUG: st.DATA_AUG_BOUND, FP_BP: st.FP_TO_BP, REFRESH: st.ITERATION_REFRESH}


def _f(series: pd.Series) -> np.ndarray:
    return series.astype("float64").to_numpy(dtype="float64", na_value=np.nan)


def phase_values(rows: pd.DataFrame) -> dict[str, np.ndarray]:
    """The phases (µs, NaN unknown) of ``summary.annotated_frame`` rows, Reduce summed over groups.

    Also, under ``REDUCE_IN_FP_BP`` / ``REDUCE_IN_REFRESH``, how much of each of
    those two phases the all-reduces cover (for the stack).
    """
    values = {name: _f(rows[column]) for name, column in PHASE_COLUMNS.items()}
    values[REDUCE] = _f(rows["_reduce"])
    values[ITERATION_TIME] = _f(rows[st.ITERATION_TIME])
    groups = sum(1 for column in rows.columns if column.startswith(st.REDUCE_START + "#"))
    starts = np.column_stack([_f(rows[st.reduce_start_key(k)]) for k in range(groups)]) if groups else np.zeros((len(rows), 0))
    ends = starts + (np.column_stack([_f(rows[st.reduce_duration_key(k)]) for k in range(groups)]) if groups else starts)
    fp, bp, end = _f(rows[st.FP_START]), _f(rows[st.BP_END]), _f(rows[st.ITERATION_END])
    values[REDUCE_IN_FP_BP] = union_length(starts, ends, fp, bp)
    values[REDUCE_IN_REFRESH] = union_length(starts, ends, bp, end)
    return values


def present_phases(values: dict[str, np.ndarray]) -> list[str]:
    """The phases measured on some iteration, in stacking order (Reduce only where the job has all-reduces)."""
    return [name for name in (GETNEXT, DATA_AUG, FP_BP, REDUCE, REFRESH) if not np.isnan(values[name]).all()]


def segments(values: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Stack parts that add up to the Iteration Time: label -> µs per iteration (0 where unknown).

    Only phases some iteration measured get a part; a phase with an inner part
    measured is split into that part and "(rest)". GetNext is stacked only
    with a Data Aug Bound to hold it (a lone first iteration's read lies
    before its Iteration Time).
    """
    present = set(present_phases(values))

    def known(name: str) -> np.ndarray:
        return np.clip(np.nan_to_num(values[name], nan=0.0), 0.0, None)

    out: dict[str, np.ndarray] = {}
    if DATA_AUG in present and GETNEXT in present:
        out[GETNEXT] = np.minimum(known(GETNEXT), known(DATA_AUG))
        out[f"{DATA_AUG} (rest)"] = known(DATA_AUG) - out[GETNEXT]
    elif DATA_AUG in present:
        out[DATA_AUG] = known(DATA_AUG)
    if REDUCE not in present:
        out.update({name: known(name) for name in (FP_BP, REFRESH) if name in present})
        return out
    in_fp_bp = np.minimum(known(REDUCE_IN_FP_BP), known(FP_BP))
    in_refresh = np.minimum(known(REDUCE_IN_REFRESH), known(REFRESH))
    if FP_BP in present:
        out[f"{FP_BP} (rest)"] = known(FP_BP) - in_fp_bp
    out[REDUCE] = in_fp_bp + in_refresh
    if REFRESH in present:
        out[f"{REFRESH} (rest)"] = known(REFRESH) - in_refresh
    return out


@dataclass
class Binning:
    """How a series of ``n`` iterations is drawn: ``size`` consecutive iterations per point."""

    n: int
    size: int

    @classmethod
    def for_length(cls, n: int) -> "Binning":
        return cls(n, 1 if n <= MAX_POINTS else math.ceil(n / TARGET_BINS))

    @property
    def binned(self) -> bool:
        return self.size > 1

    @property
    def bins(self) -> int:
        return math.ceil(self.n / self.size) if self.n else 0

    def mean(self, values: np.ndarray) -> np.ndarray:
        return self._reduce(values, np.nanmean)

    def max(self, values: np.ndarray) -> np.ndarray:
        return self._reduce(values, np.nanmax)

    def first(self, values: np.ndarray) -> np.ndarray:
        return values[:: self.size]

    def _reduce(self, values: np.ndarray, how: Callable[..., np.ndarray]) -> np.ndarray:
        if not self.binned:
            return values
        padded = np.full(self.bins * self.size, np.nan)
        padded[: self.n] = values
        with warnings.catch_warnings():  # an all-NaN bin warns; it stays NaN (unknown), which the chart wants
            warnings.simplefilter("ignore", RuntimeWarning)
            return how(padded.reshape(self.bins, self.size), axis=1)

    def note(self, what: str = "iterations") -> Optional[str]:
        """What the page says when it bins (None when every ``what`` is drawn)."""
        if not self.binned:
            return None
        return f"{self.n:,} {what}, more than {MAX_POINTS:,}: each point is the mean of {self.size} consecutive {what} ({self.bins:,} bins)."


@dataclass
class Distribution:
    """A histogram of Iteration Time (µs) and its percentiles, over the basis iterations."""

    counts: list[int]
    edges: list[float]
    percentiles: dict[int, float]
    iterations: int


def distribution(iteration_times: np.ndarray) -> Optional[Distribution]:
    known = iteration_times[~np.isnan(iteration_times)]
    if known.size == 0:
        return None
    bins = max(1, min(HISTOGRAM_BINS, int(np.unique(known).size)))
    counts, edges = np.histogram(known, bins=bins)
    pct = np.percentile(known, PERCENTILES)
    return Distribution(counts.tolist(), edges.tolist(), {p: float(v) for p, v in zip(PERCENTILES, pct)}, int(known.size))


@dataclass
class SlowIteration:
    iteration_id: int
    iteration_time_us: float
    phases: dict[str, Optional[float]]
    dominant: Optional[str]  # the phase furthest above its median (None: none is above it)
    excess_us: Optional[float]


def slowest(iteration_ids: np.ndarray, values: dict[str, np.ndarray], limit: int = SLOWEST) -> list[SlowIteration]:
    """The ``limit`` slowest iterations, each with the phase that grew most over its median ("what made it slow").

    Phases that contain another (GetNext in Data Aug Bound, Reduce in FP to BP)
    are compared as measured; the largest excess wins.
    """
    it_time = values[ITERATION_TIME]
    order = [i for i in np.argsort(-np.nan_to_num(it_time, nan=-np.inf), kind="stable")[:limit] if not np.isnan(it_time[i])]
    names = present_phases(values)
    medians = {name: float(np.nanmedian(values[name])) for name in names}
    out = []
    for i in order:
        phases = {name: (None if np.isnan(values[name][i]) else float(values[name][i])) for name in names}
        excess = {name: phases[name] - medians[name] for name in names if phases[name] is not None}
        dominant = max(excess, key=excess.get) if excess else None
        if dominant is not None and excess[dominant] <= 0:  # nothing above its median: an ordinary iteration
            dominant = None
        out.append(SlowIteration(int(iteration_ids[i]), float(it_time[i]), phases, dominant,
                                 None if dominant is None else excess[dominant]))
    return out
