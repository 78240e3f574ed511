"""Across the ranks of one job: the slow rank, and what its wait does to the other ranks' own advice.

In a synchronous data-parallel job every rank's iteration lasts as long as the slowest rank's: the
others wait for it inside the all-reduce. So comparing the ranks' iteration times finds nothing, and
on each waiting rank the wait reads as an all-reduce that does not overlap the backward pass, which
packing the gradients cannot shorten. The slow rank is therefore found as ``npu-tf-prof cluster``
finds it (``cluster.slow_rank``: per-step outlier tests of FP to BP and Data Aug Bound, and the vote
of which rank the others wait for in the all-reduce), and while some rank makes the others wait, the
waiting ranks' "all-reduce not overlapped" findings are withdrawn with a note; the slow rank's own one
stays, its Reduce being the communication without the wait.

The gain of the slow-rank finding: with its wait, the job loses the median wait it imposes per step,
so it is (that wait) / (the job's median Iteration Time). A rank that is slow without making others
wait (no shared all-reduce: independent ranks) costs its own excess: (its median − the median rank's)
/ its median, when above SLOW_RANK_SPREAD (with 2 ranks the outlier tests cannot run: the longer phase names
the cause).
"""
from __future__ import annotations

from typing import Optional

import numpy as np
import pandas as pd

from npu_tf_profiling.reports.advise.findings import LOW, MEDIUM, Advice, Finding, unknown_where
from npu_tf_profiling.reports.cluster import slow_rank as sr
from npu_tf_profiling.reports.cluster import step_table as cst
from npu_tf_profiling.reports.cluster.slow_rank.common import CAUSE_OF_METRIC, METRIC_COMPUTE, METRIC_INPUT, as_ms, nanmedian
from npu_tf_profiling.reports.cluster.slow_rank.verdict import SlowRank, phase_excess

REDUCE_RULE = "all-reduce not overlapped"
SLOW_RANK_SPREAD = 0.05  # ranks that do not wait for each other: this much above the median rank's Iteration Time
KNOBS = {  # the slow rank's cause -> (knob, what to look at on that rank)
    "compute": ("the slow rank's compute", "its FP to BP is longer than on the other ranks: look at what differs on that "
                "rank: another process on its host, a slower or throttled device, or a larger share of the data"),
    "input": ("the slow rank's input pipeline", "its Data Aug Bound is longer than on the other ranks: its input "
              "pipeline or the storage it reads from is slower (its own tf.data findings below say which knob)"),
}


def job_advice(source: str, advices: list[Advice], rows: list[pd.DataFrame]) -> Optional[Advice]:
    """The job's slow-rank finding, if any; withdraws the waiting ranks' reduce findings from `advices`."""
    frames = [r for r in rows if not r.empty]
    table = pd.concat(frames, ignore_index=True).sort_values([cst.MODEL_ID, cst.STEP, cst.INDEX], kind="stable") if frames else None
    if table is None or table[cst.INDEX].nunique() < 2:
        return None
    table = table.reset_index(drop=True)
    report = sr.analyze(table, sorted(int(r) for r in table[cst.INDEX].unique()))
    waited = [s for s in report.slow_ranks if s.makes_others_wait]
    if waited:
        slow = max(waited, key=lambda s: report.wait.ranks[s.rank].median_wait_imposed_us or 0.0)
        _withdraw_waiting_reduce(advices, slow.rank, report)
        return Advice(source, [_waited_for(slow, report, table)])
    finding = _slower(table, report)
    return Advice(source, [finding]) if finding is not None else None


def _cause(rank: int, report: sr.SlowRankReport, table: pd.DataFrame) -> Optional[str]:
    """The tests' cause of a slow rank; else the phase that is longest against the other ranks (2 ranks: no outlier test)."""
    tested = next((s for s in report.slow_ranks if s.rank == rank), None)
    if tested is not None:
        return next((c.removeprefix("likely ") for c in tested.causes if c.removeprefix("likely ") in KNOBS), None)
    excess = {metric: phase_excess(table, rank, metric) for metric in (METRIC_INPUT, METRIC_COMPUTE)}
    best = max(excess, key=lambda m: excess[m] if excess[m] is not None else float("-inf"))
    return CAUSE_OF_METRIC[best] if excess[best] is not None and excess[best] > 0 else None


def _finding(rank: int, cause: Optional[str], evidence: dict, lead: str, gain: Optional[float], formula: str,
             confidence: str) -> Finding:
    knob, look = KNOBS.get(cause or "", ("the slow rank's host", "neither its FP to BP nor its Data Aug Bound explains "
                                          "it: look at its host (other jobs, the network link) and its own findings"))
    return Finding("slow rank", knob, {"rank": rank, "cause": cause or "unknown", **evidence}, f"{lead}: {look}",
                   unknown_where("a rank's slowness is no line of the script: see that rank's own findings"),
                   None if gain is None else round(100.0 * min(gain, 1.0), 1), formula, confidence, device_id=rank)


def _waited_for(slow: SlowRank, report: sr.SlowRankReport, table: pd.DataFrame) -> Finding:
    iteration = float(nanmedian(table[cst.ITERATION_TIME].to_numpy(dtype="float64")))
    wait = report.wait.ranks[slow.rank]
    imposed = float(wait.median_wait_imposed_us or 0.0)
    cause = _cause(slow.rank, report, table)
    evidence = {"job_median_iteration_us": round(iteration, 1), "median_wait_imposed_us": round(imposed, 1),
                "its_median_reduce_us": wait.median_reduce_us, "others_median_reduce_us": wait.others_median_reduce_us,
                "wait_votes": f"{wait.votes}/{wait.steps_voted}"}
    return _finding(slow.rank, cause, evidence, f"rank {slow.rank} makes the others wait {as_ms(imposed)} a step in the all-reduce",
                    imposed / iteration if iteration > 0 else None,
                    "median wait the others pay per step for it in the all-reduce / the job's median Iteration Time",
                    MEDIUM if cause is not None else LOW)


def _slower(table: pd.DataFrame, report: sr.SlowRankReport) -> Optional[Finding]:
    """Ranks that do not wait for each other: the slowest median Iteration Time, if SLOW_RANK_SPREAD above the median rank's."""
    per_rank = table.groupby(cst.INDEX)[cst.ITERATION_TIME].median().dropna()
    if len(per_rank) < 2:
        return None
    rank, own = int(per_rank.idxmax()), float(per_rank.max())
    typical = float(np.median(per_rank.to_numpy()))
    if own <= 0 or (own - typical) / own < SLOW_RANK_SPREAD:
        return None
    evidence = {"median_iteration_us": round(own, 1), "median_rank_us": round(typical, 1)}
    return _finding(rank, _cause(rank, report, table), evidence, f"rank {rank} is slower than the median rank",
                    (own - typical) / own, "(slow rank's median − median rank's) / slow rank's median", LOW)


def _withdraw_waiting_reduce(advices: list[Advice], slow_rank: int, report: sr.SlowRankReport) -> None:
    imposed = as_ms(report.wait.ranks[slow_rank].median_wait_imposed_us)
    for advice in advices:
        kept = [f for f in advice.findings if f.rule != REDUCE_RULE or f.device_id == slow_rank]
        for gone in (f for f in advice.findings if f not in kept):
            advice.notes.append(
                f"device {gone.device_id}: its all-reduce after BP End ({gone.evidence.get('exposed_reduce_pct')}% of iteration "
                f"time) is mostly the wait for rank {slow_rank} (a median {imposed} a step), which packing cannot remove: "
                f"see the slow-rank finding")
        advice.findings = kept
