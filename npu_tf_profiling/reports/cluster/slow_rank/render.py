"""The text verdict (``slow_rank.txt``, also printed by ``npu-tf-prof cluster``)."""
from __future__ import annotations

from typing import TYPE_CHECKING

from npu_tf_profiling.reports.cluster.slow_rank.common import as_ms

if TYPE_CHECKING:  # only for the annotation: verdict builds the report and calls render_text
    from npu_tf_profiling.reports.cluster.slow_rank.verdict import SlowRankReport

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
        reduces = ", ".join(f"rank {r}: {as_ms(v.median_reduce_us)}" for r, v in sorted(w.ranks.items()))
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
            f"  - step {s['step']} (model {s['model_id']}) rank {s['rank']}: {s['metric']} {as_ms(s['value_us'])} "
            f"vs {as_ms(s['others_median_us'])} on the others" for s in shown
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
