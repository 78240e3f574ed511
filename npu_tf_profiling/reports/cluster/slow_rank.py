"""Which rank is slow, why, and which steps are missing: ``slow_rank.json`` and the text verdict.

Input: the per-(step, rank) rows of ``cluster_step_trace`` (durations only, so
the verdict does not depend on the ranks' clocks agreeing). One analyzer per
question:

1. ``outliers`` (is a rank slow in compute or in input?). For each step, the
   ranks' values of a metric (FP to BP Time = compute, Data Aug Bound = input)
   are tested for a high outlier:

   * fewer than 10 ranks: **Dixon's Q test** at 95% confidence (Rorabacher's
     critical values, n = 3..9): Q = (largest - second largest) / range;
   * 10 ranks or more: **3σ**: a value above mean + 3·std of the *other*
     ranks (leaving the rank out, so one slow rank cannot hide by inflating σ);
   * either way only a difference that matters counts: the value must exceed
     the other ranks' median by ``min_effect`` (5% of the step's median
     Iteration Time, and at least 50 µs).

   A rank is **consistently slow** in a metric when it is the outlier in at
   least half of the steps tested, or when the same test flags its median over
   all steps among the ranks' medians (robust to noisy steps: with 3 ranks,
   Dixon's test wants the other two within 3% of the range). With fewer than 3
   ranks no outlier test exists; the wait vote below still works.
2. ``wait_votes`` (who makes the others wait?). A synchronous all-reduce ends
   when the last rank arrives, so the ranks that arrived first sit in it: the
   waiting ranks show a long Reduce, the rank they wait for a short one. Each
   step votes for the rank with the shortest Reduce (summed over groups) when
   the other ranks' median Reduce exceeds it by ``min_effect``; a rank with at
   least half of the steps' votes makes the others wait, if that many votes
   are also unlikely by chance (binomial tail, each rank winning a step with
   probability 1/ranks, p <= 0.01: with 2 ranks, 10 votes in 20 steps are a
   coin's luck, 20 in 20 are not).
3. ``causes``: a rank that makes others wait and is consistently slow in
   Data Aug Bound is slow in **input**, in FP to BP in **compute**. When
   neither test applies (2 ranks) or neither flags it, the cause is the phase
   whose per-step excess over the other ranks' median is larger ("likely"),
   or "unknown" when neither exceeds ``min_effect`` (of the median step).
4. ``missing_steps``: per model, every step any rank has; a rank lacking some
   is listed (a rank that stopped early, a record lost in a crash), and so is
   a step that every rank lacks inside the range (a hole in all ranks' data).
   Missing steps are left out of the per-step tests, never filled in.

Sporadic outliers (a step slow on one rank only, the rank otherwise fine) are
listed too, largest first.
"""
from __future__ import annotations

import json
import math
import warnings
from dataclasses import asdict, dataclass, field
from typing import Any, Optional

import numpy as np
import pandas as pd

from npu_tf_profiling.reports.cluster import step_table as cst

JSON_NAME = "slow_rank.json"
TEXT_NAME = "slow_rank.txt"

# Dixon's Q (r10) critical values, 95% confidence, n = 3..9 (Rorabacher 1991).
DIXON_Q95 = {3: 0.970, 4: 0.829, 5: 0.710, 6: 0.625, 7: 0.568, 8: 0.526, 9: 0.493}
DIXON_MAX_RANKS = 9  # "fewer than 10 ranks"
SIGMAS = 3.0

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
    max_listed: int = 10  # sporadic outliers spelled out in the text


def _method(n: int) -> str:
    if n < 3:
        return "none"
    return "dixon" if n <= DIXON_MAX_RANKS else "3sigma"


def method_description(n_ranks: int) -> str:
    kind = _method(n_ranks)
    if kind == "dixon":
        return f"Dixon's Q test (95%, critical Q {DIXON_Q95[n_ranks]:.3f} for {n_ranks} ranks)"
    if kind == "3sigma":
        return "3 sigma (above mean + 3 std of the other ranks)"
    return "no outlier test (fewer than 3 ranks); the wait vote and per-phase excess decide"


def _matrix(rows: pd.DataFrame, metric: str) -> tuple[pd.DataFrame, np.ndarray]:
    """(model, step) x rank matrix of ``metric`` (NaN where a rank lacks the step or the value)."""
    wide = rows.pivot(index=[cst.MODEL_ID, cst.STEP], columns=cst.INDEX, values=metric)
    return wide, wide.to_numpy(dtype="float64", na_value=np.nan)


def _nanmedian(values: np.ndarray, axis: Optional[int] = None) -> Any:
    """np.nanmedian without the all-NaN RuntimeWarning (an all-NaN slice gives NaN, as wanted)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanmedian(values, axis=axis)


def _others_median(values: np.ndarray, rows_i: np.ndarray, cols_i: np.ndarray) -> np.ndarray:
    """For each (row, col) pair, the median of that row without that column."""
    if len(rows_i) == 0:
        return np.zeros(0)
    sub = values[rows_i].copy()
    sub[np.arange(len(rows_i)), cols_i] = np.nan
    return _nanmedian(sub, axis=1)


def high_outliers(values: np.ndarray) -> np.ndarray:
    """Boolean mask of high outliers per row (the test picked by the row's count of values)."""
    n_rows, n_cols = values.shape
    flags = np.zeros((n_rows, n_cols), dtype=bool)
    if n_rows == 0 or n_cols < 3:
        return flags
    present = ~np.isnan(values)
    n = present.sum(axis=1)
    # Dixon: the largest value of rows with 3..9 values.
    dixon = (n >= 3) & (n <= DIXON_MAX_RANKS)
    if dixon.any():
        rows = np.flatnonzero(dixon)
        sub = values[rows]
        ordered = np.sort(sub, axis=1)  # NaN last
        k = n[rows]
        top = ordered[np.arange(len(rows)), k - 1]
        second = ordered[np.arange(len(rows)), k - 2]
        spread = top - ordered[:, 0]
        crit = np.array([DIXON_Q95[int(c)] for c in k])
        with np.errstate(divide="ignore", invalid="ignore"):
            q = np.where(spread > 0, (top - second) / spread, 0.0)
        hit = q > crit
        cols = np.nanargmax(np.where(np.isnan(sub), -np.inf, sub), axis=1)
        flags[rows[hit], cols[hit]] = True
    # 3 sigma, leave-one-out: rows with 10 values or more.
    sigma = n > DIXON_MAX_RANKS
    if sigma.any():
        rows = np.flatnonzero(sigma)
        sub = values[rows]
        m = n[rows][:, None].astype("float64")
        total = np.nansum(sub, axis=1)[:, None]
        squares = np.nansum(sub * sub, axis=1)[:, None]
        with np.errstate(invalid="ignore", divide="ignore"):
            mean_o = (total - sub) / (m - 1)
            var_o = (squares - sub * sub - (m - 1) * mean_o * mean_o) / (m - 2)
            std_o = np.sqrt(np.maximum(var_o, 0.0))
            hit = (sub > mean_o + SIGMAS * std_o) & (sub > mean_o) & ~np.isnan(sub)
        flags[rows] = hit
    return flags


def _effect_floor(rows: pd.DataFrame, settings: Settings, index: pd.Index) -> np.ndarray:
    it = rows.groupby([cst.MODEL_ID, cst.STEP])[cst.ITERATION_TIME].median().reindex(index)
    floor = it.to_numpy(dtype="float64", na_value=np.nan) * settings.min_effect_share
    return np.fmax(np.nan_to_num(floor, nan=0.0), settings.min_effect_us)


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
    wide, values = _matrix(rows, metric)
    cols = [int(c) for c in wide.columns]
    floor = _effect_floor(rows, settings, wide.index)
    flags = high_outliers(values)
    r_i, c_i = np.nonzero(flags)
    excess = values[r_i, c_i] - _others_median(values, r_i, c_i)
    keep = excess >= floor[r_i]
    r_i, c_i, excess = r_i[keep], c_i[keep], excess[keep]
    tested_rows = (~np.isnan(values)).sum(axis=1) >= 3
    result = MetricResult(metric=metric, method=_method(len(rank_ids)), ranks={})
    medians = _nanmedian(values, axis=0) if len(values) else np.full(len(cols), np.nan)
    median_flags = np.zeros(len(cols), dtype=bool)
    if len(cols) >= 3 and not np.isnan(medians).all():
        median_flags = high_outliers(medians[None, :])[0]
        overall_floor = max(settings.min_effect_us, settings.min_effect_share * float(np.nan_to_num(rows[cst.ITERATION_TIME].median())))
        for j in np.flatnonzero(median_flags):
            if not medians[j] - _nanmedian(np.delete(medians, j)) >= overall_floor:
                median_flags[j] = False
    counts = np.bincount(c_i, minlength=len(cols))
    for j, rank in enumerate(cols):
        tested = int((tested_rows & ~np.isnan(values[:, j])).sum())
        others = np.delete(medians, j)
        others_median = float(_nanmedian(others)) if len(others) else float("nan")
        m = MetricRank(
            rank=rank,
            steps_tested=tested,
            outlier_steps=int(counts[j]),
            share=(float(counts[j]) / tested) if tested else 0.0,
            median_us=_num(medians[j]),
            others_median_us=_num(others_median),
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
                         "value_us": _num(values[r, c]), "others_median_us": _num(values[r, c] - ex), "excess_us": _num(ex)})
    sporadic.sort(key=lambda s: -s["excess_us"])
    result.sporadic = sporadic
    return result


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
    wide, values = _matrix(rows, cst.REDUCE)
    cols = [int(c) for c in wide.columns]
    floor = _effect_floor(rows, settings, wide.index)
    voting = (~np.isnan(values)).sum(axis=1) >= 2
    result = WaitResult(steps_voting=int(voting.sum()), ranks={r: WaitRank(rank=r) for r in rank_ids})
    if not voting.any():
        return result
    v_rows = np.flatnonzero(voting)
    sub = values[v_rows]
    winner = np.nanargmin(np.where(np.isnan(sub), np.inf, sub), axis=1)
    imposed = _others_median(values, v_rows, winner) - sub[np.arange(len(v_rows)), winner]
    counted = imposed >= floor[v_rows]
    medians = _nanmedian(values, axis=0)
    for j, rank in enumerate(cols):
        w = result.ranks[rank]
        w.steps_voted = int((voting & ~np.isnan(values[:, j])).sum())
        mine = counted & (winner == j)
        w.votes = int(mine.sum())
        w.share = w.votes / w.steps_voted if w.steps_voted else 0.0
        w.median_reduce_us = _num(medians[j])
        others = np.delete(medians, j)
        w.others_median_reduce_us = _num(_nanmedian(others)) if len(others) else None
        w.median_wait_imposed_us = _num(np.median(imposed[mine])) if w.votes else None
        w.p_value = binomial_tail(w.votes, w.steps_voted, 1.0 / len(cols)) if w.steps_voted else None
        w.makes_others_wait = (w.steps_voted > 0 and w.share >= settings.min_share
                               and w.p_value is not None and w.p_value <= settings.max_p_value)
    return result


def binomial_tail(k: int, n: int, p: float) -> float:
    """P(X >= k) for X ~ Binomial(n, p), summed in log space (no scipy; n may be thousands of steps)."""
    if k <= 0:
        return 1.0
    if p >= 1.0:
        return 1.0
    log_p, log_q = math.log(p), math.log1p(-p)
    base = math.lgamma(n + 1)
    total = 0.0
    for i in range(k, n + 1):
        total += math.exp(base - math.lgamma(i + 1) - math.lgamma(n - i + 1) + i * log_p + (n - i) * log_q)
    return min(1.0, total)


def phase_excess(rows: pd.DataFrame, rank: int, metric: str) -> Optional[float]:
    """Median over steps of (the rank's value - the other ranks' median): how much longer this phase is."""
    wide, values = _matrix(rows, metric)
    cols = [int(c) for c in wide.columns]
    if rank not in cols:
        return None
    j = cols.index(rank)
    has = ~np.isnan(values[:, j]) & ((~np.isnan(values)).sum(axis=1) >= 2)
    if not has.any():
        return None
    r_i = np.flatnonzero(has)
    diff = values[r_i, j] - _others_median(values, r_i, np.full(len(r_i), j))
    return _num(_nanmedian(diff))


def _ranges(steps: list[int]) -> str:
    """[1, 2, 3, 7, 9, 10] -> '1-3, 7, 9-10' (steps sorted ascending)."""
    spans: list[list[int]] = []
    for step in steps:
        if spans and step == spans[-1][1] + 1:
            spans[-1][1] = step
        else:
            spans.append([step, step])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in spans)


def missing_steps(rows: pd.DataFrame, all_ranks: list[int]) -> dict[str, Any]:
    """Steps some ranks lack, per model: {"models": {model: {...}}, "total_missing": n}."""
    models: dict[str, Any] = {}
    total = 0
    for model, group in rows.groupby(cst.MODEL_ID, sort=True):
        present = {int(r): set(g[cst.STEP].astype(int).tolist()) for r, g in group.groupby(cst.INDEX)}
        union = set().union(*present.values())
        lo, hi = min(union), max(union)
        entry: dict[str, Any] = {"steps": len(union), "first_step": lo, "last_step": hi, "ranks": {}}
        for rank in all_ranks:
            own = present.get(rank, set())
            lacking = sorted(union - own)
            if not lacking:
                continue
            total += len(lacking)
            entry["ranks"][str(rank)] = {
                "count": len(lacking),
                "steps": _ranges(lacking),
                "last_step": max(own) if own else None,
                "stopped_early": not own or max(own) < hi,  # the others went on after its last step
            }
        holes = sorted(set(range(lo, hi + 1)) - union)
        if holes:
            entry["absent_on_every_rank"] = {"count": len(holes), "steps": _ranges(holes)}
        models[str(int(model))] = entry
    return {"models": models, "total_missing": total}


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
    verdict: str = ""

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


def _num(value: Any) -> Optional[float]:
    try:
        f = float(value)
    except (TypeError, ValueError):
        return None
    return None if np.isnan(f) or np.isinf(f) else round(f, 1)


def _ms(us: Optional[float]) -> str:
    return "n/a" if us is None else f"{us / 1000:.2f} ms"


def communication_shares(rows: pd.DataFrame) -> dict[str, Any]:
    """Share of iteration time that is communication not overlapped, per rank and for the slowest rank per step."""
    steady = rows[rows[cst.PREPARING].notna()]
    per_rank: dict[str, Optional[float]] = {}
    for rank, g in steady.groupby(cst.INDEX, sort=True):
        it = g[cst.ITERATION_TIME].sum()
        per_rank[str(int(rank))] = float(g[cst.COMM_NOT_OVERLAPPED].sum() / it) if it > 0 else None
    stage = cst.stage_rows(steady) if not steady.empty else steady
    it = stage[cst.ITERATION_TIME].sum() if not steady.empty else 0
    return {
        "not_overlapped_share_per_rank": {k: (None if v is None else round(v, 4)) for k, v in per_rank.items()},
        "not_overlapped_share_max_over_ranks": round(float(stage[cst.COMM_NOT_OVERLAPPED].sum() / it), 4) if it else None,
        "overlapped_share_max_over_ranks": round(float(stage[cst.OVERLAPPED].sum() / it), 4) if it else None,
        "basis": "steps whose previous step is known (the first step's time includes graph warm-up)",
    }


def analyze(rows: pd.DataFrame, all_ranks: list[int], hosts: list[str] | None = None,
            notes: list[str] | None = None, settings: Settings = Settings()) -> SlowRankReport:
    """All analyzers on the rank rows of ``cluster_step_trace.rank_rows``; ``all_ranks`` includes ranks without data."""
    ranks = sorted(int(r) for r in rows[cst.INDEX].unique())
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
                    + f" (median {_ms(m.median_us)} vs {_ms(m.others_median_us)} on the other ranks)"
                )
        w = wait.ranks[rank]
        if w.makes_others_wait:
            evidence.append(
                f"the others wait for it: it had the shortest Reduce in {w.votes} of {w.steps_voted} steps "
                f"(p = {w.p_value:.1g} by chance; its median Reduce {_ms(w.median_reduce_us)}, the other ranks' "
                f"{_ms(w.others_median_reduce_us)}; they waited a median {_ms(w.median_wait_imposed_us)} per step for it)"
            )
            if not causes:
                excess = {m: phase_excess(rows, rank, m) for m in (METRIC_INPUT, METRIC_COMPUTE)}
                floor = max(settings.min_effect_us, settings.min_effect_share * float(np.nan_to_num(rows[cst.ITERATION_TIME].median())))
                best = max(excess, key=lambda m: excess[m] if excess[m] is not None else float("-inf"))
                if excess[best] is not None and excess[best] >= floor:
                    causes.append(f"likely {CAUSE_OF_METRIC[best]}")
                    evidence.append(
                        f"{best} is {_ms(excess[best])} longer than the other ranks' per step (median); "
                        f"{'FP to BP' if best == METRIC_INPUT else 'Data Aug Bound'}: {_ms(excess[METRIC_COMPUTE if best == METRIC_INPUT else METRIC_INPUT])}"
                    )
                else:
                    causes.append("unknown")
                    evidence.append("neither Data Aug Bound nor FP to BP is longer than on the other ranks: "
                                    "the time goes elsewhere (host work between steps, the network link)")
        slow.append(SlowRank(rank=rank, causes=causes, makes_others_wait=w.makes_others_wait, evidence=evidence))
    report = SlowRankReport(
        ranks=ranks, hosts=hosts or [], method=method_description(len(ranks)), settings=settings,
        compute=compute, input=input_, wait=wait, slow_ranks=slow,
        missing=missing_steps(rows, sorted(set(all_ranks) | set(ranks))),
        communication=communication_shares(rows), notes=list(notes or []),
    )
    report.verdict = render_text(report)
    return report


def render_text(report: SlowRankReport) -> str:
    lines = []
    hosts = f", {len(report.hosts)} host(s) ({', '.join(report.hosts)})" if report.hosts else ""
    lines.append(f"Cluster: {len(report.ranks)} rank(s) with data ({', '.join(map(str, report.ranks))}){hosts}.")
    lines.append(f"Outlier test per step: {report.method}.")
    if report.slow_ranks:
        for s in report.slow_ranks:
            what = " + ".join(s.causes) if s.causes else "unknown"
            wait = ", and the other ranks wait for it" if s.makes_others_wait else ""
            lines.append(f"SLOW RANK {s.rank}: cause {what}{wait}.")
            lines.extend(f"  - {e}" for e in s.evidence)
    else:
        lines.append("No slow rank: no rank is consistently an outlier in compute (FP to BP) or input (Data Aug Bound), "
                     "and none wins the wait vote in half the steps beyond chance.")
    w = report.wait
    if w.steps_voting:
        votes = ", ".join(f"rank {r}: {v.votes}/{v.steps_voted}" for r, v in sorted(w.ranks.items()))
        lines.append(f"Wait vote (steps in which the others waited for that rank in the all-reduce): {votes}.")
        reduces = ", ".join(f"rank {r}: {_ms(v.median_reduce_us)}" for r, v in sorted(w.ranks.items()))
        lines.append(f"Median Reduce per rank (long = waiting): {reduces}.")
    else:
        lines.append("Wait vote: no step has Reduce times on two ranks (no all-reduce traced), so no rank can be shown to make others wait.")
    c = report.communication
    if c.get("not_overlapped_share_max_over_ranks") is not None:
        per_rank = ", ".join(f"rank {r}: {v:.0%}" for r, v in c["not_overlapped_share_per_rank"].items() if v is not None)
        lines.append(
            f"Communication not overlapped: {c['not_overlapped_share_max_over_ranks']:.0%} of iteration time "
            f"(per-step max over ranks; {per_rank}); overlapped with compute: {c['overlapped_share_max_over_ranks']:.0%}. "
            "Communication includes the time a rank waits in the all-reduce for slower ranks."
        )
    sporadic = sorted(report.compute.sporadic + report.input.sporadic, key=lambda s: -s["excess_us"])
    if sporadic:
        shown = sporadic[: report.settings.max_listed]
        lines.append(f"Steps slow on one rank only: {len(sporadic)}" + (f" (largest {len(shown)}):" if len(sporadic) > len(shown) else ":"))
        lines.extend(
            f"  - step {s['step']} (model {s['model_id']}) rank {s['rank']}: {s['metric']} {_ms(s['value_us'])} "
            f"vs {_ms(s['others_median_us'])} on the others" for s in shown
        )
    missing = report.missing
    if missing["total_missing"]:
        lines.append(f"MISSING STEPS ({missing['total_missing']} rank-steps; they are left out of the tests, not filled in):")
        for model, entry in missing["models"].items():
            for rank, m in entry["ranks"].items():
                why = f" (stopped after step {m['last_step']})" if m["stopped_early"] and m["last_step"] is not None else (
                    " (no records at all)" if m["last_step"] is None else "")
                lines.append(f"  - model {model} rank {rank}: {m['count']} step(s) missing: {m['steps']}{why}")
    else:
        lines.append("Missing steps: none (every rank has every step).")
    for entry in missing["models"].values():
        if "absent_on_every_rank" in entry:
            lines.append(f"  - steps absent on every rank: {entry['absent_on_every_rank']['steps']}")
    for note in report.notes:
        lines.append(f"Note: {note}")
    return "\n".join(lines) + "\n"
