"""A ``DiffReport`` as text (the verdict first, then one table per model) and as JSON (the same numbers, unrounded)."""
from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

from npu_tf_profiling.reports.diff.compare import MIN_PHASE_EFFECT, SECONDARY_PART, DiffReport, ModelDiff
from npu_tf_profiling.reports.diff.stats import MIN_ITERATIONS, PhaseChange

METHOD = ("change and 95% CI: Hodges-Lehmann shift (median of all candidate - baseline differences: the change in "
          "median when the times moved as a whole; unlike the difference of the medians, it sees a change of shape) with its "
          "Mann-Whitney interval, over steady iterations (warm-up, retraced and task-traced ones left out, as in `summary`); on a cluster, "
          "each step's mean over the ranks both runs have")
HEADER = ("phase", "base median", "base p90", "cand median", "cand p90", "Δ median", "change µs", "change %", "95% CI %",
          "part of Δ", "")


def _row(c: PhaseChange) -> tuple[str, ...]:
    pct = "n/a" if c.change_pct is None else f"{c.change_pct:+.1f}"
    if c.ci_pct is not None:
        ci = f"{c.ci_pct[0]:+.1f}..{c.ci_pct[1]:+.1f}"
    else:
        ci = "n/a" if c.ci_us is None else f"{c.ci_us[0]:+.0f}..{c.ci_us[1]:+.0f} µs"
    mark = "secondary" if c.secondary else {1: "regressed", -1: "improved", 0: ""}[c.moved]
    part = "n/a" if c.part_of_change is None else f"{100 * c.part_of_change:.0f}%"
    return (c.phase, f"{c.baseline_median_us:,.0f}", f"{c.baseline_p90_us:,.0f}", f"{c.candidate_median_us:,.0f}",
            f"{c.candidate_p90_us:,.0f}", f"{c.candidate_median_us - c.baseline_median_us:+,.0f}", f"{c.change_us:+,.0f}", pct, ci,
            part, mark)


def _table(rows: list[tuple[str, ...]], indent: str) -> list[str]:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    lines = []
    for r in rows:
        cells = [r[0].ljust(widths[0])] + [v.rjust(w) for v, w in zip(r[1:-1], widths[1:-1])] + [r[-1]]
        lines.append((indent + "  ".join(cells)).rstrip())
    return lines


def _model_lines(m: ModelDiff) -> list[str]:
    it = m.phase("Iteration Time")
    ranks = f", rank(s) {', '.join(map(str, m.ranks))}" if len(m.ranks) > 1 else ""
    lines = [f"Model ID {m.model_id}{ranks}: {m.status} (Iteration Time {it.headline()}"
             + (f", from {m.source})" if m.source else ")"),
             f"  iterations compared: baseline {it.baseline_iterations}, candidate {it.candidate_iterations}"]
    lines += _table([HEADER] + [_row(c) for c in m.phases], "  ")
    if m.rank_diffs:
        moved = [r for r in m.rank_diffs if r.regressed or r.improved]
        lines.append("  Ranks whose phases moved past the threshold:" if moved else "  Ranks: no rank's phase moved past the threshold")
        for r in moved:
            parts = [f"{c.phase} {c.headline()}" for c in r.regressed + r.improved]
            what = "regressed" if r.regressed else "improved"
            lines.append(f"    rank {r.rank} {what}: " + "; ".join(parts))
    if m.ops:
        lines.append("  Ops whose time per task-traced iteration changed most (µs, baseline -> candidate):")
        lines += [f"    {o.change_us:+,.1f}  {o.name} ({o.op_type}): {o.baseline_us:,.1f} -> {o.candidate_us:,.1f}" for o in m.ops]
    lines += [f"  Note: {n}" for n in m.notes]
    return lines


def render_text(report: DiffReport) -> str:
    t = report.threshold_pct
    lines = [report.verdict,
             f"baseline:  {report.baseline.path}", f"candidate: {report.candidate.path}",
             f"threshold: {t:g}% (a change counts when its 95% CI leaves out 0 and it is at least {t:g}% of the baseline's "
             f"median; a phase's also at least {MIN_PHASE_EFFECT:.0%} of the median Iteration Time; a phase past it holding under "
             f"{SECONDARY_PART:.0%} of the Iteration Time change is 'secondary', not a cause)",
             METHOD + f"; no CI under {MIN_ITERATIONS} iterations a side.", ""]
    if report.slow_ranks is not None:
        lines += ["Slow ranks:", f"  baseline:  {report.slow_ranks[0]}", f"  candidate: {report.slow_ranks[1]}", ""]
    for m in report.models:
        lines += _model_lines(m) + [""]
    lines += [f"Note: {n}" for n in report.notes]
    return "\n".join(lines).rstrip("\n") + "\n"


def to_dict(report: DiffReport) -> dict[str, Any]:
    def changes(items: list[PhaseChange]) -> list[dict[str, Any]]:
        return [{**asdict(c), "significant": c.significant} for c in items]

    return {
        "verdict": report.verdict,
        "exit_code": report.exit_code,
        "baseline": str(report.baseline.path),
        "candidate": str(report.candidate.path),
        "threshold_pct": report.threshold_pct,
        "method": METHOD,
        "slow_ranks": None if report.slow_ranks is None else {"baseline": report.slow_ranks[0], "candidate": report.slow_ranks[1]},
        "models": [{
            "model_id": m.model_id, "ranks": m.ranks, "status": m.status, "source": m.source, "phases": changes(m.phases),
            "per_rank": [{"rank": r.rank, "regressed": [c.phase for c in r.regressed], "improved": [c.phase for c in r.improved],
                             "phases": changes(r.phases)} for r in m.rank_diffs],
            "ops": [{**asdict(o), "change_us": o.change_us} for o in m.ops],
            "notes": m.notes,
        } for m in report.models],
        "notes": report.notes,
    }


def render_json(report: DiffReport) -> str:
    return json.dumps(to_dict(report), indent=2) + "\n"
