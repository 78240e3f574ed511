"""Every rule over every model of a PROF folder (across the ranks of a job: ``ranks``)."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Optional


from npu_tf_profiling.reports.advise import rules_data, rules_host, rules_overhead, rules_reduce, rules_runs
from npu_tf_profiling.reports.advise.evidence import ModelEvidence, model_evidence
from npu_tf_profiling.reports.advise.findings import MIN_GAIN_PCT, Advice, Finding
from npu_tf_profiling.reports.errors import NothingFoundError
from npu_tf_profiling.reports.prof_dir import ProfData, load_prof_dir
from npu_tf_profiling.reports.step.summary import ProfSummary, summarize_prof_data

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
        if not ev.sites.recorded:
            advice.notes.append(f"device {ev.summary.device_id}: no call_sites.json, so lines are unknown "
                                "(a run from before advise, or the package was not imported by the script)")
    advice.notes = list(dict.fromkeys(advice.notes))
    return advice.sort()


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
