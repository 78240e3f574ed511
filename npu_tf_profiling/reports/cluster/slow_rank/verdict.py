"""Question 3 and the whole report: why each slow rank is slow, the communication shares, SlowRankReport."""
from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any, Optional

import numpy as np
import pandas as pd

from npu_tf_profiling.reports.cluster import step_table as cst
from npu_tf_profiling.reports.cluster.slow_rank.common import (
    CAUSE_OF_METRIC,
    METRIC_COMPUTE,
    METRIC_INPUT,
    Settings,
    as_ms,
    metric_matrix,
    nanmedian,
    median_without,
    rounded_us,
)
from npu_tf_profiling.reports.cluster.slow_rank.missing import missing_steps, step_ranges
from npu_tf_profiling.reports.cluster.slow_rank.outlier_methods import method_description
from npu_tf_profiling.reports.cluster.slow_rank.outliers import MetricResult, outliers
from npu_tf_profiling.reports.cluster.slow_rank.waits import WaitResult, wait_votes

def phase_excess(rows: pd.DataFrame, rank: int, metric: str) -> Optional[float]:
    """Median over steps of (the rank's value - the other ranks' median): how much longer this phase is."""
    wide, values = metric_matrix(rows, metric)
    cols = [int(c) for c in wide.columns]
    if rank not in cols:
        return None
    j = cols.index(rank)
    has = ~np.isnan(values[:, j]) & ((~np.isnan(values)).sum(axis=1) >= 2)
    if not has.any():
        return None
    r_i = np.flatnonzero(has)
    diff = values[r_i, j] - median_without(values, r_i, np.full(len(r_i), j))
    return rounded_us(nanmedian(diff))


@dataclass
class SlowRank:
    rank: int
    causes: list[str]
    makes_others_wait: bool
    evidence: list[str]


@dataclass
class SlowRankReport:
    ranks: list[int]
    hosts: list[str]
    method: str
    settings: Settings
    compute: MetricResult
    input: MetricResult
    wait: WaitResult
    slow_ranks: list[SlowRank]
    missing: dict[str, Any]
    communication: dict[str, Any]
    notes: list[str] = field(default_factory=list)
    verdict: str = ""  # the text verdict: render.render_text(report), set by the caller (render reads this module, not back)

    def to_dict(self) -> dict[str, Any]:
        def metric(m: MetricResult) -> dict[str, Any]:
            return {"metric": m.metric, "method": m.method, "slow_ranks": m.slow_ranks,
                    "ranks": {str(r): asdict(v) for r, v in sorted(m.ranks.items())}, "sporadic_outliers": m.sporadic}

        return {
            "ranks": self.ranks,
            "hosts": self.hosts,
            "method": self.method,
            "settings": asdict(self.settings),
            "slow_ranks": [asdict(s) for s in self.slow_ranks],
            "compute": metric(self.compute),
            "input": metric(self.input),
            "wait": {"steps_voting": self.wait.steps_voting, "waited_for": self.wait.waited_for,
                     "ranks": {str(r): asdict(v) for r, v in sorted(self.wait.ranks.items())}},
            "missing_steps": self.missing,
            "communication": self.communication,
            "notes": self.notes,
            "verdict": self.verdict,
        }

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), indent=2, allow_nan=False, default=str) + "\n"


def communication_shares(rows: pd.DataFrame) -> dict[str, Any]:
    """Share of iteration time that is communication not overlapped, per rank and for the slowest rank per step."""
    steady = rows[rows[cst.PREPARING].notna()]
    columns = [cst.ITERATION_TIME, cst.COMM_NOT_OVERLAPPED, cst.OVERLAPPED]
    sums = steady.groupby(cst.INDEX, sort=True)[columns].sum()
    per_rank = {str(int(rank)): (float(r[cst.COMM_NOT_OVERLAPPED] / r[cst.ITERATION_TIME]) if r[cst.ITERATION_TIME] > 0 else None)
                for rank, r in zip(sums.index, sums.to_dict("records"))}
    stage = steady.groupby([cst.MODEL_ID, cst.STEP], sort=False)[columns].max()  # the per-step maximum over the ranks
    it = stage[cst.ITERATION_TIME].sum() if not steady.empty else 0
    return {
        "not_overlapped_share_per_rank": {k: (None if v is None else round(v, 4)) for k, v in per_rank.items()},
        "not_overlapped_share_max_over_ranks": round(float(stage[cst.COMM_NOT_OVERLAPPED].sum() / it), 4) if it else None,
        "overlapped_share_max_over_ranks": round(float(stage[cst.OVERLAPPED].sum() / it), 4) if it else None,
        "basis": "steps whose previous step is known (the first step's time includes graph warm-up)",
    }


TASK_TRACED = "task-traced"
RETRACED = "retraced"
# Why a kind of step is left out of the tests on every rank: the one rank's step is slow for a reason the
# others do not share, and they then wait for it in the all-reduce.
LEFT_OUT_WHY = {
    TASK_TRACED: "FULL_TRACE slows a traced step and writing its trace delays the next, on that rank, and the others wait for it",
    RETRACED: "the step's call traced a new concrete function on that rank (a tf.function retrace), and the others wait for it",
}


def without_steps(rows: pd.DataFrame, left_out: dict[str, frozenset[tuple[int, int]]]) -> tuple[pd.DataFrame, list[str]]:
    """``rows`` less the (model, step) pairs in ``left_out`` (by kind, ``LEFT_OUT_WHY``), on every rank; a note a kind."""
    if not any(left_out.values()):
        return rows, []
    keys = list(zip(rows[cst.MODEL_ID].astype(int).tolist(), rows[cst.STEP].astype(int).tolist()))
    drops = {kind: np.fromiter((key in steps for key in keys), dtype=bool, count=len(keys))
             for kind, steps in left_out.items() if steps}
    drop = np.logical_or.reduce(list(drops.values()))
    if not drop.any():
        return rows, []
    if drop.all():
        return rows, [f"every step was {' or '.join(drops)} (or right after a task-traced one), so the slow-rank "
                      "tests use them and include what slowed them"]
    notes = []
    for kind, dropped in drops.items():
        if not dropped.any():
            continue
        by_model: dict[int, list[int]] = {}
        for model, step in sorted({key for key, gone in zip(keys, dropped) if gone}):
            by_model.setdefault(model, []).append(step)
        count = sum(len(steps) for steps in by_model.values())
        where = "; ".join(f"model {model}: {step_ranges(steps)}" for model, steps in by_model.items())
        notes.append(f"{count} {kind} step(s) left out of the slow-rank tests ({where}): {LEFT_OUT_WHY[kind]}")
    return rows[~drop].reset_index(drop=True), notes


def analyze(rows: pd.DataFrame, all_ranks: list[int], hosts: list[str] | None = None,
            notes: list[str] | None = None, settings: Settings = Settings(),
            left_out: dict[str, frozenset[tuple[int, int]]] | None = None) -> SlowRankReport:
    """All analyzers on the rank rows of ``cluster_step_trace.rank_rows``; ``all_ranks`` includes ranks without data.

    ``left_out``: by kind (``LEFT_OUT_WHY``), (model, step) pairs the tests skip; they
    still count as present for the missing-steps question.
    """
    present = rows
    rows, left_out_notes = without_steps(rows, left_out or {})
    notes = list(notes or []) + left_out_notes
    ranks = sorted(int(r) for r in present[cst.INDEX].unique())
    compute = outliers(rows, METRIC_COMPUTE, settings)
    input_ = outliers(rows, METRIC_INPUT, settings)
    wait = wait_votes(rows, settings)
    slow: list[SlowRank] = []
    for rank in sorted(set(compute.slow_ranks) | set(input_.slow_ranks) | set(wait.waited_for)):
        causes, evidence = [], []
        for result in (input_, compute):
            m = result.ranks[rank]
            if m.consistently_slow:
                causes.append(CAUSE_OF_METRIC[result.metric])
                evidence.append(
                    f"{result.metric}: an outlier in {m.outlier_steps} of {m.steps_tested} steps tested"
                    + (", and its median is an outlier among the ranks' medians" if m.median_outlier else "")
                    + f" (median {as_ms(m.median_us)} vs {as_ms(m.others_median_us)} on the other ranks)"
                )
        w = wait.ranks[rank]
        if w.makes_others_wait:
            evidence.append(
                f"the others wait for it: it had the shortest Reduce in {w.votes} of {w.steps_voted} steps "
                f"(p = {w.p_value:.1g} by chance; its median Reduce {as_ms(w.median_reduce_us)}, the other ranks' "
                f"{as_ms(w.others_median_reduce_us)}; they waited a median {as_ms(w.median_wait_imposed_us)} per step for it)"
            )
            if not causes:
                excess = {m: phase_excess(rows, rank, m) for m in (METRIC_INPUT, METRIC_COMPUTE)}
                floor = max(settings.min_effect_us, settings.min_effect_share * float(np.nan_to_num(rows[cst.ITERATION_TIME].median())))
                best = max(excess, key=lambda m: excess[m] if excess[m] is not None else float("-inf"))
                if excess[best] is not None and excess[best] >= floor:
                    causes.append(f"likely {CAUSE_OF_METRIC[best]}")
                    evidence.append(
                        f"{best} is {as_ms(excess[best])} longer than the other ranks' per step (median); "
                        f"{'FP to BP' if best == METRIC_INPUT else 'Data Aug Bound'}: {as_ms(excess[METRIC_COMPUTE if best == METRIC_INPUT else METRIC_INPUT])}"
                    )
                else:
                    causes.append("unknown")
                    evidence.append("neither Data Aug Bound nor FP to BP is longer than on the other ranks: "
                                    "the time goes elsewhere (host work between steps, the network link)")
        slow.append(SlowRank(rank=rank, causes=causes, makes_others_wait=w.makes_others_wait, evidence=evidence))
    report = SlowRankReport(
        ranks=ranks, hosts=hosts or [], method=method_description(len(ranks)), settings=settings,
        compute=compute, input=input_, wait=wait, slow_ranks=slow,
        missing=missing_steps(present, sorted(set(all_ranks) | set(ranks))),
        communication=communication_shares(rows), notes=notes,
    )
    return report
