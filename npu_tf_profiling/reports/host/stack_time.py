"""What the host's Python did, from ``with_stack`` samples and ``gc_detect_threshold`` pauses (``raw_format.host_samples``).

Each stack sample is put in the phase its time falls in, against one model's
step-trace rows: **between iterations** (a Data Aug Bound window, as ``between``
splits it: **waiting on input** inside a run that fetches an input batch, **other
runs** inside any other run, **between iterations: in the step call** where the
thread was inside the training step's own call, before its first op or after its end,
and **host** the rest), **in the step call** (FP Start to Iteration End), or outside
every iteration.

A step call's time before its first op is Data Aug Bound, as CANN counts it, but it is not
the script's Python: a TF2 step whose executor threads were busy with an input pipeline's
map (no prefetch) had all 126 of its "host" samples there (2026-12-07, benchmarks/advise_cases/
tf2_no_prefetch.py with with_stack; the history file no-prefetch-gap.md), and its Python
between calls took 2 µs. Such a sample holds the call hook's frame (``STEP_CALL_FRAME``,
around every ``tf.function`` call) and not the frame that times a call as another run
(``OTHER_RUN_FRAME``); it names the calling line, which the user cannot make cheaper, so
``sample_phases`` counts it apart from the host lines (the summary, the folded stacks and
the timeline alike).

A sample names the line of the script's own code it was on (the innermost frame outside the standard library,
site-packages and this package): that line, not numpy's internals, is what the
user can change. A line's share is its samples over the host samples between
iterations; at 100 Hz a share from n samples has a binomial uncertainty of
about sqrt(p(1-p)/n).

GC pauses count where they start: between iterations when in a Data Aug Bound
window, and their time there is the GC part of the host's time.
"""
from __future__ import annotations

import os
from collections import Counter
from pathlib import Path
from typing import Any, Optional

import numpy as np
import pandas as pd

from npu_tf_profiling.raw_format import layout
from npu_tf_profiling.raw_format.host_samples import GcPauses, HostStacks, read_gc_pauses, read_host_stacks
from npu_tf_profiling.raw_format.other_runs import INPUT_READS, OtherRuns
from npu_tf_profiling.raw_format.run_info import RunInfo
from npu_tf_profiling.reports.step import table as st
from npu_tf_profiling.reports.step.windows import inside, window_index

PHASE_HOST = "between iterations: host"
PHASE_CALL = "between iterations: in the step call"
# (file ending, function) of the frames that say a sample was inside a tf.function's call (module docstring)
STEP_CALL_FRAME = (f"npu_tf_profiling{os.sep}runtime{os.sep}functions{os.sep}host_reads.py", "claiming_call")
OTHER_RUN_FRAME = (f"npu_tf_profiling{os.sep}runtime{os.sep}other_runs.py", "function_call")
PHASE_INPUT = "between iterations: waiting on input"
PHASE_OTHER = "between iterations: other runs"
PHASE_STEP = "in the step call"
PHASE_OUTSIDE = "outside iterations"
TOP_LINES = 10


def load_stacks(device_dir: Path, info: RunInfo) -> Optional[HostStacks]:
    """The device's samples; None when the run was not asked for them (``with_stack``)."""
    if not info.option("with_stack"):
        return None
    return read_host_stacks(Path(device_dir) / layout.DATA_DIR / layout.HOST_STACKS_FILE)


def load_gc(device_dir: Path, info: RunInfo) -> Optional[GcPauses]:
    """The device's GC pauses; None when the run was not asked for them (``gc_detect_threshold``)."""
    if info.option("gc_detect_threshold") is None:
        return None
    return read_gc_pauses(Path(device_dir) / layout.DATA_DIR / layout.GC_PAUSES_FILE)


def phases(times: np.ndarray, rows: pd.DataFrame, runs: Optional[OtherRuns]) -> np.ndarray:
    """Each time's phase (``PHASE_*``) against `rows` (one model's step-trace rows)."""
    fp, end = st.float_values(rows[st.FP_START]), st.float_values(rows[st.ITERATION_END])
    out = np.full(len(times), PHASE_OUTSIDE, dtype=object)
    out[window_index(fp, end, times) >= 0] = PHASE_STEP
    between = window_index(fp - st.float_values(rows[st.DATA_AUG_BOUND]), fp, times) >= 0
    out[between] = PHASE_HOST
    if runs is not None and len(runs.kinds):
        reads = np.asarray(runs.kinds, dtype=object) == INPUT_READS
        out[between & inside(times, runs.starts[~reads], runs.ends[~reads])] = PHASE_OTHER
        out[between & inside(times, runs.starts[reads], runs.ends[reads])] = PHASE_INPUT
    return out


def _has(frames: list[tuple[str, int, str]], marker: tuple[str, str]) -> bool:
    return any(f[2] == marker[1] and f[0].endswith(marker[0]) for f in frames)


def in_step_call(frames: list[tuple[str, int, str]]) -> bool:
    """Whether a stack was inside a training step's call (the call hook's frame, not another run's; module docstring)."""
    return _has(frames, STEP_CALL_FRAME) and not _has(frames, OTHER_RUN_FRAME)


def step_call_samples(stacks: HostStacks) -> np.ndarray:
    """Per sample, whether its stack was inside a step call (one test per distinct stack)."""
    marked = {stack_id: in_step_call(frames) for stack_id, frames in stacks.frames.items()}
    return np.fromiter((marked.get(int(s), False) for s in stacks.stack_ids), dtype=bool, count=len(stacks.stack_ids))


def sample_phases(stacks: HostStacks, rows: pd.DataFrame, runs: Optional[OtherRuns]) -> np.ndarray:
    """Each sample's phase: ``phases`` of its time, with the host samples inside a step call as ``PHASE_CALL``."""
    phase = phases(stacks.times_us, rows, runs)
    phase[(phase == PHASE_HOST) & step_call_samples(stacks)] = PHASE_CALL
    return phase


def line_of(stacks: HostStacks, stack_id: int) -> tuple[str, int, str]:
    """The frame a sample names: the script's innermost frame, else the innermost one."""
    frames = stacks.frames[stack_id]
    user = stacks.user.get(stack_id)
    return frames[user if user is not None else -1]


def top_lines(stacks: HostStacks, mask: np.ndarray, limit: int = TOP_LINES) -> list[dict[str, Any]]:
    """The lines the masked samples were on, most first: file, line, function, samples, share of the masked samples."""
    total = int(mask.sum())
    counts = Counter(line_of(stacks, int(s)) for s in stacks.stack_ids[mask])
    return [{"file": file, "line": line, "function": function, "samples": n, "share": n / total}
            for (file, line, function), n in counts.most_common(limit)]


def stack_summary(stacks: HostStacks, rows: pd.DataFrame, runs: Optional[OtherRuns]) -> dict[str, Any]:
    """One model's samples by phase, the lines holding the host time between iterations, and the lines that ran the
    other runs between them (an evaluation's ``sess.run`` line): when other runs fill the gap, those are the lines to
    look at, and the host's own lines may hold no sample at all."""
    phase = sample_phases(stacks, rows, runs)
    host, other, call = phase == PHASE_HOST, phase == PHASE_OTHER, phase == PHASE_CALL
    return {"samples": len(phase), "by_phase": {str(k): int(v) for k, v in Counter(phase.tolist()).items()},
            "host_samples": int(host.sum()), "lines": top_lines(stacks, host) if host.any() else [],
            "step_call_samples": int(call.sum()),
            "other_run_samples": int(other.sum()), "other_run_lines": top_lines(stacks, other) if other.any() else []}


def gc_summary(pauses: GcPauses, rows: pd.DataFrame, threshold_ms: Any) -> dict[str, Any]:
    """One model's GC pauses: all of them, those between iterations, and their time as a share of Data Aug Bound."""
    fp, dab, it_time = st.float_values(rows[st.FP_START]), st.float_values(rows[st.DATA_AUG_BOUND]), st.float_values(rows[st.ITERATION_TIME])
    between = window_index(fp - dab, fp, pauses.starts) >= 0
    known = np.isfinite(dab) & np.isfinite(it_time)
    dab_total, it_total = float(dab[known].sum()), float(it_time[known].sum())
    between_us = float(pauses.durations[between].sum())
    return {"threshold_ms": threshold_ms, "count": len(pauses.starts), "total_us": round(float(pauses.durations.sum()), 1),
            "between_count": int(between.sum()), "between_us": round(between_us, 1),
            "share_of_between": between_us / dab_total if dab_total > 0 else None,
            "share_of_iteration": between_us / it_total if it_total > 0 else None}


def step_call_share(stacks: Optional[dict[str, Any]]) -> Optional[float]:
    """Of the samples in the host time between iterations, the share inside the step's own call (None: none there)."""
    if not stacks:
        return None
    call = stacks.get("step_call_samples", 0)
    total = call + stacks["host_samples"]
    return call / total if total else None


def host_clause(stacks: Optional[dict[str, Any]]) -> str:
    """What the summary's host clause adds: the top line, with its share of the host samples, and the share of the
    samples that were inside the step call instead (before its first op or after its end: not the script's Python)."""
    parts = []
    share = step_call_share(stacks)
    if share:
        parts.append(f"{100 * share:.0f}% of its samples inside the step call, before its first op or after its end")
    if stacks and stacks["lines"]:
        top = stacks["lines"][0]
        which = "Python samples" if share else "samples"
        parts.append(f"top line {Path(top['file']).name}:{top['line']} {top['function']}, {100 * top['share']:.0f}% of its {which}")
    return f" ({'; '.join(parts)})" if parts else ""


def shown_lines(top: list[dict[str, Any]]) -> str:
    """The first three of `top_lines`' lines, as ``file:line function share%``."""
    return ", ".join(f"{Path(x['file']).name}:{x['line']} {x['function']} {100 * x['share']:.1f}%" for x in top[:3])


def render_lines(stacks: Optional[dict[str, Any]], gc_info: Optional[dict[str, Any]], host_share: Optional[float]) -> list[str]:
    """The summary's lines for ``with_stack`` and ``gc_detect_threshold`` (none when neither was on)."""
    lines = []
    if stacks is not None:
        if stacks.get("step_call_samples"):
            lines.append(f"In the step call between iterations (with_stack, {stacks['step_call_samples']} of "
                         f"{stacks['samples']} samples): the thread was inside the training step's call, before its first "
                         "op or after its end, not in the script's Python; the executor was late to start the step (its "
                         "threads busy, e.g. with an input map that has no prefetch) or its call's own overhead")
        if stacks["lines"]:
            lines.append(f"Host lines between iterations (with_stack, {stacks['host_samples']} of {stacks['samples']} samples): "
                         f"{shown_lines(stacks['lines'])}")
        elif not stacks.get("step_call_samples"):
            lines.append(f"with_stack: none of the {stacks['samples']} stack samples fell in the host time between "
                         f"iterations (by phase: {stacks['by_phase'] or 'no samples'})")
        if stacks.get("other_run_lines"):
            lines.append(f"Lines of the other runs between iterations (with_stack, {stacks['other_run_samples']} samples): "
                         f"{shown_lines(stacks['other_run_lines'])}")
    if gc_info is not None:
        line = (f"GC pauses >= {gc_info['threshold_ms']:g} ms: {gc_info['count']} ({gc_info['total_us']:,.0f} us); "
                f"between iterations {gc_info['between_count']} ({gc_info['between_us']:,.0f} us")
        share = gc_info["share_of_between"]
        line += f", {100 * share:.1f}% of Data Aug Bound)" if share is not None else ")"
        if host_share is not None and gc_info["share_of_iteration"] is not None:
            gc_part = min(gc_info["share_of_iteration"], host_share)
            line += f"; host {100 * host_share:.1f}% = GC {100 * gc_part:.1f}% + the rest {100 * (host_share - gc_part):.1f}%"
        lines.append(line)
    return lines
