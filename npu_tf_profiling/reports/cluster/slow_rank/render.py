"""The text verdict (``slow_rank.txt``, also printed by ``npu-tf-prof cluster``).

The caller of ``verdict.analyze`` renders its report here (``cluster.analysis``): the analysis
does not know its text, so this module reads ``verdict`` and nothing reads back.
"""
from __future__ import annotations

from npu_tf_profiling.reports.cluster.slow_rank.common import as_ms
from npu_tf_profiling.reports.cluster.slow_rank.verdict import SlowRankReport

# The verdict stays short at any cluster size (40 lines or fewer at 10,000 ranks): per-rank lists
# show the TOP_K ranks that matter most and a count; every rank's values stay in slow_rank.json.
TOP_K = 8
FULL_SLOW_RANKS = 3  # slow ranks shown with their evidence; more are named on one line
MAX_MISSING_LINES = 5
MAX_NOTES = 5
MAX_NOTE_CHARS = 300
ALL_IN_JSON = "every rank in slow_rank.json"


def _ranks(ranks: list[int]) -> str:
    """A few ranks one by one, many as ranges ('0-1023, 1025')."""
    from npu_tf_profiling.reports.cluster.slow_rank.missing import step_ranges

    return ", ".join(map(str, ranks)) if len(ranks) <= 2 * TOP_K else step_ranges(sorted(ranks))


def _top(items: list[str], total: int, what: str) -> str:
    """``items`` (already the top ones) joined, with 'top k of n' when some were left out."""
    shown = ", ".join(items)
    return shown if len(items) >= total else f"{shown} (top {len(items)} of {total} {what}; {ALL_IN_JSON})"


def render_text(report: SlowRankReport) -> str:
    lines = []
    hosts = report.hosts
    host_text = (", ".join(hosts) if len(hosts) <= TOP_K else ", ".join(hosts[:TOP_K]) + ", ...") if hosts else ""
    hosts_part = f", {len(hosts)} host(s) ({host_text})" if hosts else ""
    lines.append(f"Cluster: {len(report.ranks)} rank(s) with data ({_ranks(report.ranks)}){hosts_part}.")
    lines.append(f"Outlier test per step: {report.method}.")
    if report.slow_ranks:
        for s in report.slow_ranks[:FULL_SLOW_RANKS]:
            what = " + ".join(s.causes) if s.causes else "unknown"
            wait = ", and the other ranks wait for it" if s.makes_others_wait else ""
            lines.append(f"SLOW RANK {s.rank}: cause {what}{wait}.")
            lines.extend(f"  - {e}" for e in s.evidence)
        more = report.slow_ranks[FULL_SLOW_RANKS:]
        if more:
            lines.append(f"{len(more)} more slow rank(s): {_ranks([s.rank for s in more])} (causes and evidence in slow_rank.json).")
    else:
        lines.append("No slow rank: no rank is consistently an outlier in compute (FP to BP) or input (Data Aug Bound), "
                     "and none wins the wait vote in half the steps beyond chance.")
    w = report.wait
    if w.steps_voting:
        by_votes = sorted(w.ranks.items(), key=lambda item: (-item[1].votes, item[0]))
        shown = by_votes if len(by_votes) <= TOP_K else [item for item in by_votes[:TOP_K] if item[1].votes]
        votes = _top([f"rank {r}: {v.votes}/{v.steps_voted}" for r, v in shown], len(by_votes), "ranks by votes")
        lines.append(f"Wait vote (steps in which the others waited for that rank in the all-reduce): {votes or 'no votes'}.")
        by_reduce = sorted(((r, v) for r, v in w.ranks.items() if v.median_reduce_us is not None), key=lambda item: (item[1].median_reduce_us, item[0]))
        if len(w.ranks) <= TOP_K:
            reduces = ", ".join(f"rank {r}: {as_ms(v.median_reduce_us)}" for r, v in sorted(w.ranks.items()))
        else:
            reduces = _top([f"rank {r}: {as_ms(v.median_reduce_us)}" for r, v in by_reduce[:TOP_K]], len(w.ranks), "ranks, shortest first")
        lines.append(f"Median Reduce per rank (long = waiting): {reduces}.")
    else:
        lines.append("Wait vote: no step has Reduce times on two ranks (no all-reduce traced), so no rank can be shown to make others wait.")
    c = report.communication
    if c.get("not_overlapped_share_max_over_ranks") is not None:
        shares = sorted(((r, v) for r, v in c["not_overlapped_share_per_rank"].items() if v is not None), key=lambda item: -item[1])
        if len(shares) > TOP_K:
            per_rank = _top([f"rank {r}: {v:.0%}" for r, v in shares[:TOP_K]], len(shares), "ranks, highest first")
        else:
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
    lines.extend(_missing_lines(report.missing))
    for note in report.notes[:MAX_NOTES]:
        lines.append(f"Note: {note}" if len(note) <= MAX_NOTE_CHARS else f"Note: {note[:MAX_NOTE_CHARS]}... (whole note in slow_rank.json)")
    if len(report.notes) > MAX_NOTES:
        lines.append(f"{len(report.notes) - MAX_NOTES} more note(s) in slow_rank.json.")
    return "\n".join(lines) + "\n"


def _missing_lines(missing: dict) -> list[str]:
    if not missing["total_missing"]:
        lines = ["Missing steps: none (every rank has every step)."]
    else:
        lines = [f"MISSING STEPS ({missing['total_missing']} rank-steps; they are left out of the tests, not filled in):"]
        entries = [(model, rank, m) for model, entry in missing["models"].items() for rank, m in entry["ranks"].items()]
        entries.sort(key=lambda e: -e[2]["count"])
        for model, rank, m in entries[:MAX_MISSING_LINES]:
            why = f" (stopped after step {m['last_step']})" if m["stopped_early"] and m["last_step"] is not None else (
                " (no records at all)" if m["last_step"] is None else "")
            lines.append(f"  - model {model} rank {rank}: {m['count']} step(s) missing: {_short(m['steps'])}{why}")
        if len(entries) > MAX_MISSING_LINES:
            lines.append(f"  - and {len(entries) - MAX_MISSING_LINES} more rank(s) with missing steps (most first; {ALL_IN_JSON})")
    for entry in missing["models"].values():
        if "absent_on_every_rank" in entry:
            lines.append(f"  - steps absent on every rank: {_short(entry['absent_on_every_rank']['steps'])}")
    return lines


def _short(ranges: str) -> str:
    return ranges if len(ranges) <= MAX_NOTE_CHARS else ranges[:MAX_NOTE_CHARS] + "... (all in slow_rank.json)"
