"""Extra runs between iterations: a second run to read the loss, an evaluation or summaries each step.

From the split of the gap between steps (``reports.step.between``), over the
iterations past each kind's first run (that one also holds the kind's one-time
set-up, which running it less often does not save: the first evaluation run
of a TF1 case took 70 ms, the next ones 0.2 ms). A kind's cost o is its runs'
time plus its share of the host time between steps: each call (every other
run, and the training run's own) spends Python outside its recorded span
(feeds, fetches, the call path), so the host time is credited to the calls in
equal parts and a kind with n of the N calls gets n/N of it. Running it every
K steps instead of about every step saves o * (1 - 1/K); an action that
removes the runs (the loss fetched by the training run itself) saves o; runs
made on some steps only are counted at half. The line is the run's recorded caller.
"""

from __future__ import annotations

from npu_tf_profiling.raw_format import call_sites as cs
from npu_tf_profiling.raw_format import other_runs as kinds
from npu_tf_profiling.reports.advise.evidence import ModelEvidence
from npu_tf_profiling.reports.advise.findings import HIGH, MEDIUM, Finding, pct, unknown_where
from npu_tf_profiling.reports.step.between import gap_parts, kind_totals

MIN_RUN_SHARE = 0.05
EVERY = 100  # the K suggested

# kind -> (knob, action, whether the action removes the runs (else: every EVERY steps))
ACTIONS = {
    kinds.EVALUATION: ("Session.run fetches", "fetch it in the training run: sess.run([train_op, loss, ...]) instead of a "
                       f"second sess.run, or evaluate every {EVERY} steps", True),
    kinds.SUMMARIES: ("summary frequency", f"write summaries every {EVERY} steps (save_summaries_steps={EVERY}, or "
                      f"`if step % {EVERY} == 0`)", False),
    kinds.FUNCTION_CALLS: ("tf.function outputs", "return the value from the training tf.function instead of calling a "
                           "second function each step", True),
    kinds.VALIDATION: ("Model.fit(validation_freq)", "Model.fit(..., validation_freq=N) or validation_steps: validation "
                       "less often, or on fewer batches", False),
    kinds.VARIABLE_READS: ("Session.run fetches", "fetch the variable (global_step) with the training run", True),
    kinds.CHECKPOINT: ("checkpoint frequency", f"save checkpoints every {EVERY * 10} steps (save_checkpoints_steps)", False),
}


def extra_runs(ev: ModelEvidence) -> list[Finding]:
    split = ev.summary.between
    if not split or not split.get("other_runs") or ev.other_runs is None:
        return []
    parts = gap_parts(ev.rows, ev.other_runs)
    kept = parts.past_first_runs()
    total = float(parts.iteration_us[kept].sum())
    if total <= 0:
        return []
    totals = kind_totals(parts, kept)
    calls = sum(value["count"] for value in totals.values()) + int(kept.sum())  # each step's own run is a call too
    host = float(parts.host_us[kept].sum())
    out = []
    for kind, value in totals.items():
        if kind not in ACTIONS or not value["count"]:
            continue
        runs_share = value["time_us"] / total
        host_share = host * value["count"] / calls / total
        share = runs_share + host_share
        if share < MIN_RUN_SHARE:
            continue
        knob, action, removes = ACTIONS[kind]
        per_step = value["count"] / max(1, int(kept.sum()))
        gain = share if removes else share * (1 - 1 / EVERY) if per_step >= 0.5 else share * 0.5
        sites = sorted((s for s in ev.sites.of(cs.OTHER_RUN) if s.args.get("kind") == kind), key=lambda s: -s.calls)
        where = sites[0].where if sites else unknown_where(
            "no caller recorded for these runs" + ("" if ev.sites.recorded else " (no call_sites.json)"))
        formula = (f"o = {runs_share:.3f} + {host_share:.3f} (the {kind} runs' time, and {value['count']} of the "
                   f"{calls} calls' share of the host time between steps, / Σ Iteration Time past each kind's first run)"
                   + ("" if removes else f" * (1 - 1/{EVERY})" if per_step >= 0.5 else " * 0.5 (runs on some steps only)"))
        out.append(Finding(f"{kind} between steps", knob,
                           {f"{kind}_runs": value["count"], "runs_per_step": round(per_step, 2), "share_pct": pct(share),
                            "runs_pct": pct(runs_share), "host_credit_pct": pct(host_share),
                            "first_runs_left_out": int(parts.mask.sum() - kept.sum())},
                           action, where, pct(gain), formula, HIGH if sites else MEDIUM))
    return out


RULES = (extra_runs,)
