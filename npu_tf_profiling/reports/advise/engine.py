"""Every rule over every model of a PROF folder (across the ranks of a job: ``ranks``), and over each slow
stretch anomaly_capture caught.

A capture is taken because some iterations turned slow; the steady run's advice says what to change in
general, not what made that stretch slow. So the rules run again on the rows of the stretch alone (its
first to last slow iteration, in its model) with the stretch's own shares: an input stall names the
tf.data knobs, a burst of GC the collector, an evaluation run its line, and the gain is a share of the
stretch's iteration time. What changed inside the step (ops) is ``reports.anomalies``' part.
"""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any, Optional

import numpy as np

from npu_tf_profiling.reports.advise import rules_data, rules_host, rules_overhead, rules_reduce, rules_runs
from npu_tf_profiling.reports.advise.evidence import ModelEvidence, model_evidence
from npu_tf_profiling.reports.advise.findings import MIN_GAIN_PCT, Advice, Finding
from npu_tf_profiling.reports.errors import NothingFoundError
from npu_tf_profiling.reports.anomalies import read_anomaly_lines
from npu_tf_profiling.reports.prof_dir import ProfData, load_prof_dir, rows_of
from npu_tf_profiling.reports.step import table as st
from npu_tf_profiling.reports.step.summary import ProfSummary, summarize_prof_data

def model_findings(ev: ModelEvidence) -> list[Finding]:
    found: list[Finding] = []
    for rule in (*rules_data.RULES, *rules_overhead.RULES, *rules_runs.RULES):
        found.extend(rule(ev))
    # The host time other findings already claim: per-call overhead's, and the extra runs' calls' part (rules_runs).
    covered = sum((f.expected_gain_pct or 0.0) if f.rule == "per-call overhead" else f.evidence.get("host_credit_pct", 0.0)
                  for f in found) / 100.0
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


def advise_data(data: ProfData, stretches: bool = True) -> Advice:
    """The findings of one PROF folder already read; with ``stretches``, each slow stretch's top finding as a note."""
    evidence = model_evidence(data)
    if not evidence:
        raise NothingFoundError(f"{data.prof_dir}: no timed iteration to advise on")
    advice = Advice(str(data.prof_dir))
    for ev in evidence:
        advice.findings.extend(model_findings(ev))
        if not ev.sites.recorded:
            advice.notes.append(f"device {ev.summary.device_id}: no call_sites.json, so lines are unknown "
                                "(a run from before advise, or the package was not imported by the script)")
    for stretch in capture_advice(data) if stretches else ():
        top = stretch["findings"][0]["headline"] if stretch["findings"] else NO_STRETCH_FINDING
        advice.notes.append(f"device {stretch['device_id']}, model {stretch['model_id']}: the slow stretch at iterations "
                            f"{stretch['first_slow']}..{stretch['last_slow']} (anomaly_capture): {top}")
    advice.notes = list(dict.fromkeys(advice.notes))
    return advice.sort()


NO_STRETCH_FINDING = "no rule fires on its own iterations: the time went inside the step (see what changed in `summary`)"


def capture_advice(data: ProfData) -> list[dict[str, Any]]:
    """The rules on each anomaly's slow stretch (module docstring): its key and its findings, best first."""
    out: list[dict[str, Any]] = []
    frame = data.table.frame
    ids: Optional[np.ndarray] = None  # the table's Iteration IDs, read once when a folder has anomalies
    for device in data.devices:
        for line in read_anomaly_lines(device.device_dir):
            first, last, model = line.get("first_slow"), line.get("last_slow"), line.get("model_id")
            if line.get("kind") != "anomaly" or not all(isinstance(v, int) for v in (first, last, model)):
                continue
            if ids is None:
                ids = frame[st.ITERATION_ID_COL].astype("float64").to_numpy(dtype="float64", na_value=np.nan)
            mask = ((frame[st.DEVICE_ID] == device.device_id) & (frame[st.MODEL_ID] == model)).to_numpy(dtype=bool) \
                & (ids >= first) & (ids <= last)
            if not mask.any():
                continue
            findings = sorted((f for ev in model_evidence(rows_of(data, mask)) for f in model_findings(ev)),
                              key=lambda f: -(f.expected_gain_pct if f.expected_gain_pct is not None else -1.0))
            out.append({"device_id": device.device_id, "model_id": model, "first_slow": first, "last_slow": last,
                        "findings": [dict(f.to_dict(), headline=f.headline()) for f in findings]})
    return out


def top_finding_line(data: ProfData) -> Optional[str]:
    """The summary's and the charts page's one line: the best finding, or None (no finding, or none computable)."""
    try:
        advice = advise_data(data, stretches=False)  # the stretches are the anomalies' own lines
    except Exception:  # noqa: BLE001 - the summary never fails for its advice line
        return None
    return f"Top advice: {advice.findings[0].headline()}" if advice.findings else None


def with_capture_advice(summary: ProfSummary, data: ProfData) -> ProfSummary:
    """Each anomaly entry of the summary gets ``advice``: the findings on its slow stretch ([] when no rule fires)."""
    if summary.anomalies:
        found = {(c["device_id"], c["model_id"], c["first_slow"]): c["findings"] for c in capture_advice(data)}
        for entry in summary.anomalies:
            entry["advice"] = found.get((entry.get("device_id"), entry.get("model_id"), entry.get("first_slow")), [])
    return summary


def summary_with_top_finding(prof_dir: Path | str) -> ProfSummary:
    """``npu-tf-prof summary``'s content: the folder's summary headed by the best finding, with each slow stretch's
    advice (raises like ``load_prof_dir``)."""
    data = load_prof_dir(prof_dir)
    return with_capture_advice(replace(summarize_prof_data(data), top_advice=top_finding_line(data)), data)
