"""Every rule over every model of a PROF folder, and across the ranks of an output folder.

Multi-rank: the ranks' median Iteration Times are compared; a rank slower
than the median rank by more than SLOW_RANK_SPREAD gets a finding carrying
its own top finding's knob and line (its cause), the gain being what the job
would save if it ran at the median rank's pace: (slow - median) / slow.
"""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Optional

import numpy as np

from npu_tf_profiling.reports.advise import rules_data, rules_host, rules_overhead, rules_reduce, rules_runs
from npu_tf_profiling.reports.advise.evidence import ModelEvidence, model_evidence
from npu_tf_profiling.reports.advise.findings import MIN_GAIN_PCT, Advice, Finding, LOW
from npu_tf_profiling.reports.errors import NothingFoundError
from npu_tf_profiling.reports.prof_dir import ProfData, load_prof_dir
from npu_tf_profiling.reports.step.summary import ProfSummary, summarize_prof_data

SLOW_RANK_SPREAD = 0.05


def model_findings(ev: ModelEvidence) -> list[Finding]:
    found: list[Finding] = []
    for rule in (*rules_data.RULES, *rules_overhead.RULES, *rules_runs.RULES):
        found.extend(rule(ev))
    covered = sum(f.expected_gain_pct or 0.0 for f in found if f.rule == "per-call overhead") / 100.0
    found.extend(rules_host.host_python(ev, covered))
    found.extend(rules_host.gc_pauses(ev))
    found.extend(rules_host.saturated_cpu(ev))
    found.extend(rules_reduce.exposed_reduce(ev))
    for f in found:
        f.device_id, f.model_id = ev.summary.device_id, ev.summary.model_id
    return [f for f in found if f.expected_gain_pct is None or f.expected_gain_pct >= MIN_GAIN_PCT]


def advise_prof_dir(prof_dir: Path | str) -> Advice:
    """The findings of one PROF folder, best first (raises like ``load_prof_dir``; NothingFoundError without iterations)."""
    return advise_data(load_prof_dir(prof_dir))


def advise_data(data: ProfData) -> Advice:
    """The findings of one PROF folder already read."""
    evidence = model_evidence(data)
    if not evidence:
        raise NothingFoundError(f"{data.prof_dir}: no timed iteration to advise on")
    advice = Advice(str(data.prof_dir))
    for ev in evidence:
        advice.findings.extend(model_findings(ev))
        rank = ev.info.rank_id if ev.info.rank_id is not None else ev.summary.device_id
        if ev.summary.median_iteration_time_us is not None:
            advice.rank_medians[rank] = max(advice.rank_medians.get(rank, 0.0), ev.summary.median_iteration_time_us)
        if not ev.sites.recorded:
            advice.notes.append(f"device {ev.summary.device_id}: no call_sites.json, so lines are unknown "
                                "(a run from before advise, or the package was not imported by the script)")
    advice.notes = list(dict.fromkeys(advice.notes))
    return advice.sort()


def slow_rank(per_dir: list[Advice]) -> Optional[Finding]:
    """Across the PROF folders of one job: a finding for the slowest rank, if slow."""
    advices = [(rank, median, a) for a in per_dir for rank, median in a.rank_medians.items()]
    if len({rank for rank, _, _ in advices}) < 2:
        return None
    medians = np.asarray([m for _, m, _ in advices])
    rank, slow, advice = max(advices, key=lambda item: item[1])
    typical = float(np.median(medians))
    spread = (slow - typical) / slow if slow > 0 else 0.0
    if spread < SLOW_RANK_SPREAD:
        return None
    cause = advice.findings[0] if advice.findings else None
    return Finding("slow rank", cause.knob if cause else "unknown", {"rank": rank, "median_iteration_us": round(slow, 1),
                   "median_rank_us": round(typical, 1), "spread_pct": round(100 * spread, 1)},
                   f"rank {rank} is {100 * spread:.1f}% slower than the median rank; its top cause: "
                   + (cause.action if cause else "none found (look at its host: other jobs, a slower device)"),
                   cause.where if cause else "unknown: no finding on the slow rank", round(100 * spread, 1),
                   "(slow rank's median - median rank's) / slow rank's median: the others wait for it", LOW,
                   device_id=rank)


def top_finding_line(data: ProfData) -> Optional[str]:
    """The summary's and the charts page's one line: the best finding, or None (no finding, or none computable)."""
    try:
        advice = advise_data(data)
    except Exception:  # noqa: BLE001 - the summary never fails for its advice line
        return None
    return f"Top advice: {advice.findings[0].headline()}" if advice.findings else None


def summary_with_top_finding(prof_dir: Path | str) -> ProfSummary:
    """``npu-tf-prof summary``'s content: the folder's summary headed by the best finding (raises like ``load_prof_dir``)."""
    data = load_prof_dir(prof_dir)
    return replace(summarize_prof_data(data), top_advice=top_finding_line(data))
