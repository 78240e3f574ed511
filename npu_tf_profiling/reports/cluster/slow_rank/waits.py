"""Question 2: which rank makes the others wait in the all-reduce (the wait vote)?"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np
import pandas as pd

from npu_tf_profiling.reports.cluster import step_table as cst
from npu_tf_profiling.reports.cluster.slow_rank.common import (
    Settings, effect_floor, median_without, medians_without_each, metric_matrix, nanmedian, rounded_us,
)
from npu_tf_profiling.reports.cluster.slow_rank.outlier_methods import binomial_tail

@dataclass
class WaitRank:
    rank: int
    steps_voted: int = 0  # steps in which this rank had a Reduce and at least one other rank did
    votes: int = 0  # steps in which the others waited for it
    share: float = 0.0
    median_reduce_us: Optional[float] = None
    others_median_reduce_us: Optional[float] = None
    median_wait_imposed_us: Optional[float] = None  # over its votes: others' median Reduce - its Reduce
    p_value: Optional[float] = None  # chance of this many votes or more if every rank were as likely to win
    makes_others_wait: bool = False


@dataclass
class WaitResult:
    steps_voting: int
    ranks: dict[int, WaitRank]

    @property
    def waited_for(self) -> list[int]:
        return [r for r, w in sorted(self.ranks.items()) if w.makes_others_wait]


def wait_votes(rows: pd.DataFrame, settings: Settings = Settings()) -> WaitResult:
    """Per step, the rank the others waited for in the all-reduce (shortest Reduce), and the tally."""
    rank_ids = sorted(int(r) for r in rows[cst.INDEX].unique())
    wide, values = metric_matrix(rows, cst.REDUCE)
    cols = [int(c) for c in wide.columns]
    floor = effect_floor(rows, settings, wide.index)
    voting = (~np.isnan(values)).sum(axis=1) >= 2
    result = WaitResult(steps_voting=int(voting.sum()), ranks={r: WaitRank(rank=r) for r in rank_ids})
    if not voting.any():
        return result
    v_rows = np.flatnonzero(voting)
    sub = values[v_rows]
    winner = np.nanargmin(np.where(np.isnan(sub), np.inf, sub), axis=1)
    imposed = median_without(values, v_rows, winner) - sub[np.arange(len(v_rows)), winner]
    counted = imposed >= floor[v_rows]
    medians = nanmedian(values, axis=0)
    others_medians = medians_without_each(medians)
    present = ~np.isnan(values)
    steps_voted = (voting[:, None] & present).sum(axis=0)
    for j, rank in enumerate(cols):
        w = result.ranks[rank]
        w.steps_voted = int(steps_voted[j])
        mine = counted & (winner == j)
        w.votes = int(mine.sum())
        w.share = w.votes / w.steps_voted if w.steps_voted else 0.0
        w.median_reduce_us = rounded_us(medians[j])
        w.others_median_reduce_us = rounded_us(others_medians[j]) if len(cols) > 1 else None
        w.median_wait_imposed_us = rounded_us(np.median(imposed[mine])) if w.votes else None
        w.p_value = binomial_tail(w.votes, w.steps_voted, 1.0 / len(cols)) if w.steps_voted else None
        w.makes_others_wait = (w.steps_voted > 0 and w.share >= settings.min_share
                               and w.p_value is not None and w.p_value <= settings.max_p_value)
    return result
