"""What every slow-rank analyzer shares: settings, the metrics, and the (step x rank) matrix."""
from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np
import pandas as pd

from npu_tf_profiling.reports.cluster import step_table as cst

JSON_NAME = "slow_rank.json"
TEXT_NAME = "slow_rank.txt"

METRIC_COMPUTE = cst.FP_TO_BP
METRIC_INPUT = cst.DATA_AUG_BOUND
CAUSE_OF_METRIC = {METRIC_COMPUTE: "compute", METRIC_INPUT: "input"}


@dataclass(frozen=True)
class Settings:
    min_share: float = 0.5  # of tested steps, to call a rank consistently slow / waited for
    min_effect_share: float = 0.05  # of the step's median Iteration Time
    min_effect_us: float = 50.0
    max_p_value: float = 0.01  # the wait vote must be this unlikely by chance (binomial, 1/ranks per step)
    min_steps: int = 3  # a rank tested in fewer steps is never called consistently slow
    max_listed: int = 5  # sporadic outliers spelled out in the text (all are in slow_rank.json)


def metric_matrix(rows: pd.DataFrame, metric: str) -> tuple[pd.DataFrame, np.ndarray]:
    """(model, step) x rank matrix of ``metric`` (NaN where a rank lacks the step or the value)."""
    wide = rows.pivot(index=[cst.MODEL_ID, cst.STEP], columns=cst.INDEX, values=metric)
    return wide, wide.to_numpy(dtype="float64", na_value=np.nan)


def nanmedian(values: np.ndarray, axis: Optional[int] = None) -> Any:
    """np.nanmedian without the all-NaN RuntimeWarning (an all-NaN slice gives NaN, as wanted)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanmedian(values, axis=axis)


def medians_without_each(values: np.ndarray) -> np.ndarray:
    """For each entry j, ``nanmedian(np.delete(values, j))``, for all j at once (sorting once, not once per rank).

    Removing sorted element p shifts the ones above it down by one, so the
    middle of the rest is one or two known sorted elements. A NaN entry
    leaves the others' median as it is. NaN where nothing would remain.
    """
    out = np.full(len(values), np.nan)
    known = np.flatnonzero(~np.isnan(values))
    n = len(known)
    if n == 0:
        return out
    order = known[np.argsort(values[known], kind="stable")]
    ordered = values[order]
    out[np.isnan(values)] = nanmedian(values)
    if n == 1:
        return out
    m = n - 1
    position = np.empty(n, dtype=np.int64)
    position[np.arange(n)] = np.arange(n)

    def rest(k: int) -> np.ndarray:  # the k-th element of the rest, for each removed position
        return np.where(k < position, ordered[k], ordered[min(k + 1, n - 1)])

    middle = rest(m // 2) if m % 2 else (rest(m // 2 - 1) + rest(m // 2)) / 2
    out[order] = middle
    return out


def median_without(values: np.ndarray, rows_i: np.ndarray, cols_i: np.ndarray) -> np.ndarray:
    """For each (row, col) pair, the median of that row without that column."""
    if len(rows_i) == 0:
        return np.zeros(0)
    sub = values[rows_i].copy()
    sub[np.arange(len(rows_i)), cols_i] = np.nan
    return nanmedian(sub, axis=1)


def effect_floor(rows: pd.DataFrame, settings: Settings, index: pd.Index) -> np.ndarray:
    it = rows.groupby([cst.MODEL_ID, cst.STEP])[cst.ITERATION_TIME].median().reindex(index)
    floor = it.to_numpy(dtype="float64", na_value=np.nan) * settings.min_effect_share
    return np.fmax(np.nan_to_num(floor, nan=0.0), settings.min_effect_us)


def rounded_us(value: Any) -> Optional[float]:
    try:
        f = float(value)
    except (TypeError, ValueError):
        return None
    return None if np.isnan(f) or np.isinf(f) else round(f, 1)


def as_ms(us: Optional[float]) -> str:
    return "n/a" if us is None else f"{us / 1000:.2f} ms"
