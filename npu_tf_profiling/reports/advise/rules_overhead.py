"""Per-call host overhead: Keras steps_per_execution, iterations_per_loop, retraces, eager ops between steps.

The host time between two steps (h: the gap that is neither input nor a
recorded run) is paid once per call of the step. Running N steps per call
pays it once per N: the gain is h * (1 - 1/N). Retraces cost their measured
trace time; eager ops their share of the stack samples between steps.
"""
from __future__ import annotations

import numpy as np

from npu_tf_profiling.raw_format import call_sites as cs
from npu_tf_profiling.reports.advise.evidence import ModelEvidence
from npu_tf_profiling.reports.step.windows import inside
from npu_tf_profiling.reports.advise.findings import HIGH, LOW, MEDIUM, Finding, pct, unknown_where
from npu_tf_profiling.reports.advise.patches import Edit, suggested_diff

MIN_HOST_SHARE = 0.05
STEPS_PER_CALL = 32  # the N suggested: per-call overhead becomes ~3% of what it was


def steps_per_execution(ev: ModelEvidence) -> list[Finding]:
    h = ev.host_share()
    compiles = [s for s in ev.sites.of(cs.COMPILE) if s.args.get("steps_per_execution") in (None, 1)]
    if h < MIN_HOST_SHARE or not compiles or not ev.is_function:
        return []
    site = compiles[0]
    gain = h * (1 - 1 / STEPS_PER_CALL)
    return [Finding("per-call overhead", "Model.compile(steps_per_execution)",
                    {"host_between_steps_pct": pct(h), "steps_per_execution": site.args.get("steps_per_execution")},
                    f"Model.compile(..., steps_per_execution={STEPS_PER_CALL})", site.where, pct(gain),
                    f"h * (1 - 1/N), h = {h:.3f}, N = {STEPS_PER_CALL}", MEDIUM,
                    diff=suggested_diff(site.file, [Edit(site.line, "compile", "steps_per_execution", str(STEPS_PER_CALL))]))]


def iterations_per_loop(ev: ModelEvidence) -> list[Finding]:
    h = ev.host_share()
    configs = [s for s in ev.sites.of(cs.RUN_CONFIG) if s.args.get("iterations_per_loop") == 1]
    if h < MIN_HOST_SHARE or not configs or ev.is_function:
        return []
    site = configs[0]
    gain = h * (1 - 1 / STEPS_PER_CALL)
    return [Finding("per-call overhead", "NPURunConfig(iterations_per_loop)",
                    {"host_between_steps_pct": pct(h), "iterations_per_loop": 1},
                    f"NPURunConfig(..., iterations_per_loop={STEPS_PER_CALL}) (on Ascend: the loop runs on the device; "
                    "CPU/GPU TensorFlow accepts it with no effect)", site.where, pct(gain),
                    f"h * (1 - 1/N), h = {h:.3f}, N = {STEPS_PER_CALL} (on Ascend)", LOW,
                    diff=suggested_diff(site.file, [Edit(site.line, "NPURunConfig", "iterations_per_loop", str(STEPS_PER_CALL))]))]


def retraces(ev: ModelEvidence) -> list[Finding]:
    count, time_us = ev.retraces
    start, end = ev.span()
    if not count or end <= start:
        return []
    share = min(1.0, time_us / (end - start))
    return [Finding("tf.function retraces", "tf.function(reduce_retracing / input_signature)",
                    {"retraces": count, "trace_time_us": round(time_us, 1)},
                    "give the tf.function an input_signature (or reduce_retracing=True); a partial last batch: "
                    "batch(..., drop_remainder=True)", unknown_where("the retrace records name the function, not its line"),
                    pct(share), "Σ retrace time / (last iteration end - first iteration start)", HIGH if count > 1 else MEDIUM)]


def eager_ops(ev: ModelEvidence) -> list[Finding]:
    truth = ev.truth
    if truth.stack_times is None or truth.stack_eager is None:
        return []
    starts, ends = ev.host_windows()
    between = inside(truth.stack_times, starts, ends)
    if not between.any():
        return []
    eager = between & truth.stack_eager
    fraction = float(eager.sum()) / float(between.sum())
    gain = ev.host_share() * fraction
    if gain * 100 < 1.0:
        return []
    lines = [line for line in np.asarray(truth.stack_lines, dtype=object)[eager] if line]
    top = max(set(lines), key=lines.count) if lines else None
    return [Finding("eager ops between steps", "move the ops into the tf.function",
                    {"between_samples": int(between.sum()), "eager_samples": int(eager.sum())},
                    "move the eager TensorFlow ops run between steps into the training tf.function (or return "
                    "their result from it)", top or unknown_where("no user line in the eager samples"), pct(gain),
                    f"h * eager samples / samples between steps, h = {ev.host_share():.3f}", MEDIUM)]


RULES = (steps_per_execution, iterations_per_loop, retraces, eager_ops)
