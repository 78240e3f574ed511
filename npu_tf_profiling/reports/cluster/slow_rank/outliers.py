"""Question 1: is a rank consistently slow in compute (FP to BP) or in input (Data Aug Bound)?"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np
import pandas as pd

from npu_tf_profiling.reports.cluster import step_table as cst
from npu_tf_profiling.reports.cluster.slow_rank.common import (
    Settings, effect_floor, median_without, medians_without_each, metric_matrix, nanmedian, rounded_us,
)
from npu_tf_profiling.reports.cluster.slow_rank.outlier_methods import high_outliers, method_for

@dataclass
class MetricRank:
    """One rank's record in one metric's outlier test."""

    rank: int
    steps_tested: int = 0
    outlier_steps: int = 0
    share: float = 0.0
    median_us: Optional[float] = None
    others_median_us: Optional[float] = None
    median_outlier: bool = False  # its median over steps is an outlier among the ranks' medians
    consistently_slow: bool = False


@dataclass
class MetricResult:
    metric: str
    method: str
    ranks: dict[int, MetricRank]
    sporadic: list[dict[str, Any]] = field(default_factory=list)  # per-step outliers of ranks not consistently slow

    @property
    def slow_ranks(self) -> list[int]:
        return [r for r, m in sorted(self.ranks.items()) if m.consistently_slow]


def outliers(rows: pd.DataFrame, metric: str, settings: Settings = Settings()) -> MetricResult:
    """Per-step high-outlier test of ``metric`` across ranks, and which ranks are consistently slow."""
    rank_ids = sorted(int(r) for r in rows[cst.INDEX].unique())
    wide, values = metric_matrix(rows, metric)
    cols = [int(c) for c in wide.columns]
    floor = effect_floor(rows, settings, wide.index)
    flags = high_outliers(values)
    r_i, c_i = np.nonzero(flags)
    excess = values[r_i, c_i] - median_without(values, r_i, c_i)
    keep = excess >= floor[r_i]
    r_i, c_i, excess = r_i[keep], c_i[keep], excess[keep]
    tested_rows = (~np.isnan(values)).sum(axis=1) >= 3
    result = MetricResult(metric=metric, method=method_for(len(rank_ids)), ranks={})
    medians = nanmedian(values, axis=0) if len(values) else np.full(len(cols), np.nan)
    median_flags = np.zeros(len(cols), dtype=bool)
    if len(cols) >= 3 and not np.isnan(medians).all():
        median_flags = high_outliers(medians[None, :])[0]
        overall_floor = max(settings.min_effect_us, settings.min_effect_share * float(np.nan_to_num(rows[cst.ITERATION_TIME].median())))
        for j in np.flatnonzero(median_flags):
            if not medians[j] - nanmedian(np.delete(medians, j)) >= overall_floor:
                median_flags[j] = False
    counts = np.bincount(c_i, minlength=len(cols))
    others_medians = medians_without_each(medians)
    tested_counts = (tested_rows[:, None] & ~np.isnan(values)).sum(axis=0)
    for j, rank in enumerate(cols):
        tested = int(tested_counts[j])
        others_median = float(others_medians[j])
        m = MetricRank(
            rank=rank,
            steps_tested=tested,
            outlier_steps=int(counts[j]),
            share=(float(counts[j]) / tested) if tested else 0.0,
            median_us=rounded_us(medians[j]),
            others_median_us=rounded_us(others_median),
            median_outlier=bool(median_flags[j]),
        )
        m.consistently_slow = tested >= settings.min_steps and (m.median_outlier or m.share >= settings.min_share)
        result.ranks[rank] = m
    for rank in rank_ids:
        result.ranks.setdefault(rank, MetricRank(rank=rank))
    slow = set(result.slow_ranks)
    sporadic = []
    steps = wide.index.to_list()
    for r, c, ex in zip(r_i.tolist(), c_i.tolist(), excess.tolist()):
        if cols[c] in slow:
            continue
        model, step = steps[r]
        sporadic.append({"model_id": int(model), "step": int(step), "rank": cols[c], "metric": metric,
                         "value_us": rounded_us(values[r, c]), "others_median_us": rounded_us(values[r, c] - ex), "excess_us": rounded_us(ex)})
    sporadic.sort(key=lambda s: -s["excess_us"])
    result.sporadic = sporadic
    return result
