"""Host work between steps: the Python there (its line from with_stack), GC pauses, a saturated host CPU.

h is the gap's share that is neither input nor a recorded run. With stack
samples, a line's gain is h times its share of the samples taken between
steps; without them, the finding is to turn with_stack on. GC: the pauses'
time inside the iterations over their total time.

Samples between steps that were inside the step's own call (before its first op or after its end:
``stack_time.in_step_call``) are no line's: the step call's line is not work to move. Their share
of h is said as its own finding, with no gain, since what would shorten it depends on why the
executor started late (the tf.data rules' knobs where an input pipeline runs beside it).
"""
from __future__ import annotations

from collections import Counter

import numpy as np

from npu_tf_profiling.reports.advise.evidence import ModelEvidence
from npu_tf_profiling.reports.step.windows import inside
from npu_tf_profiling.reports.advise.findings import LOW, MEDIUM, Finding, pct, unknown_where
from npu_tf_profiling.reports.advise.rules_overhead import MIN_HOST_SHARE

SATURATED_CPU_PCT = 90.0


def host_python(ev: ModelEvidence, covered: float) -> list[Finding]:
    """`covered`: the part of h other findings already claim (per-call overhead, the extra runs' calls), not counted twice."""
    h = ev.host_share() - covered - _gc_share(ev)
    if h < MIN_HOST_SHARE:
        return []
    truth = ev.truth
    if truth.stack_times is None:
        return [Finding("host Python between steps", "options: with_stack", {"host_between_steps_pct": pct(h)},
                        "profile again with \"with_stack\": \"on\" to find the line (its samples name the file:line)",
                        unknown_where("no with_stack samples in this folder"), pct(h),
                        f"h = {h:.3f}: all of the host time between steps (an upper bound)", LOW)]
    starts, ends = ev.host_windows()
    between = inside(truth.stack_times, starts, ends)
    if not between.any():
        return []
    in_call = between & truth.stack_in_call if truth.stack_in_call is not None else np.zeros_like(between)
    found = _in_step_call(h, int(in_call.sum()), int(between.sum()))
    lines = Counter(line for line in np.asarray(truth.stack_lines, dtype=object)[between & ~in_call] if line)
    if not lines or h * (1.0 - in_call.sum() / between.sum()) < MIN_HOST_SHARE:  # the script's Python: too little to act on
        return found
    line, count = lines.most_common(1)[0]
    fraction = count / float(between.sum())
    return found + [Finding("host Python between steps", "the line's work", {"host_between_steps_pct": pct(h),
                    "samples_between": int(between.sum()), "samples_at_line": count},
                    "move this work out of the training loop, do it every N steps, or into the tf.data pipeline",
                    line, pct(h * fraction), f"h * samples at the line / samples between steps, h = {h:.3f}", MEDIUM)]


def _in_step_call(h: float, in_call: int, between: int) -> list[Finding]:
    """The host time between steps spent inside the step's own call: said, with no gain (module docstring)."""
    share = h * in_call / between
    if share < MIN_HOST_SHARE:
        return []
    return [Finding("step call starts late", "the executor's threads", {"host_between_steps_pct": pct(h),
                    "samples_between": between, "samples_in_step_call": in_call, "in_step_call_pct": pct(share)},
                    "this time is inside the training step's call, before its first op or after its end, not the "
                    "script's Python: where an input pipeline runs beside the step, its map's ops hold the executor's "
                    "threads (see the tf.data findings: prefetch lets it run ahead instead); otherwise fewer calls "
                    "(steps_per_execution, or several steps in one tf.function)",
                    unknown_where("the step call's own line: no line of the script's holds this time"), None,
                    f"not predicted: h * samples in the step call / samples between steps = {share:.3f} is the time, "
                    "not what a knob saves", LOW)]


def _gc_share(ev: ModelEvidence) -> float:
    truth = ev.truth
    start, end = ev.span()
    if truth.gc_starts is None or end <= start:
        return 0.0
    inside = np.clip(np.minimum(truth.gc_ends, end) - np.maximum(truth.gc_starts, start), 0, None)
    return float(inside.sum()) / (end - start)


def gc_pauses(ev: ModelEvidence) -> list[Finding]:
    share = _gc_share(ev)
    if share * 100 < 1.0:
        return []
    return [Finding("GC pauses", "gc.freeze() / gc.set_threshold", {"gc_pauses": int(len(ev.truth.gc_starts)),
                    "gc_share_pct": pct(share)},
                    "call gc.freeze() once the model and pipeline are built, and raise the thresholds: "
                    "gc.set_threshold(50000, 50, 100)", unknown_where("a GC pause has no line: it is the whole script's"),
                    pct(share), "Σ GC pause time inside the iterations / their total time", MEDIUM)]


def saturated_cpu(ev: ModelEvidence) -> list[Finding]:
    usage = ev.truth.cpu_usage_pct
    load = ev.host_share() + ev.input_share()
    if usage is None or usage < SATURATED_CPU_PCT or load < MIN_HOST_SHARE:
        return []
    return [Finding("saturated host CPU", "host threads", {"host_cpu_usage_pct": round(usage, 1),
                    "input_and_host_pct": pct(load)},
                    "the host CPU is saturated: fewer intra/inter-op threads for the pipeline "
                    "(tf.data.Options().threading.private_threadpool_size), preprocess offline, or more cores",
                    unknown_where("a saturated CPU is the whole host's"), None,
                    "not predictable: a saturated host slows every phase at once", LOW)]
