"""The one place `advise` reads the host-truth files: with_stack's stack samples, GC pauses, host_sys CPU usage.

Other parts of the package write them (the ``with_stack``, ``gc_detect_threshold`` and ``host_sys`` /
``host_sys_usage`` options: ``raw_format.host_samples``, ``raw_format.host_usage``'s host_sys.csv); `advise` needs a few facts
from them, and must work on a folder that has none (the options were off, or an earlier version wrote
it). So the rules see only `HostTruth`: None for what was not recorded, which they then say, never guess.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import numpy as np

from npu_tf_profiling.raw_format import layout
from npu_tf_profiling.raw_format.host_samples import read_gc_pauses, read_host_stacks
from npu_tf_profiling.reports.host.raw import read_host_samples
from npu_tf_profiling.reports.host.stack_time import in_step_call, step_call_samples

EAGER_MARKER = f"tensorflow{os.sep}python{os.sep}eager{os.sep}execute.py"  # an eager op runs through it
SYS_CPU_IDLE = 5  # host_sys.csv's "sys_cpu" group: user, sys, iowait, irq, soft, idle (cumulative)


@dataclass
class HostTruth:
    """What the host-truth files of one device folder say (None / empty: not recorded)."""

    # with_stack: sample times (µs), each sample's innermost user line ("file:line", "" when none), whether
    # an eager op was running, and whether the thread was inside a training step's call (stack_time.in_step_call)
    stack_times: Optional[np.ndarray] = None
    stack_lines: list[str] = field(default_factory=list)
    stack_eager: Optional[np.ndarray] = None
    stack_in_call: Optional[np.ndarray] = None
    # gc_detect_threshold: pause spans (µs)
    gc_starts: Optional[np.ndarray] = None
    gc_ends: Optional[np.ndarray] = None
    # host_sys_usage cpu: the host's busy share in percent over the run (all cores, all processes)
    cpu_usage_pct: Optional[float] = None


def read_host_truth(device_dir: Path) -> HostTruth:
    truth = HostTruth()
    data = Path(device_dir) / layout.DATA_DIR
    stacks = read_host_stacks(data / layout.HOST_STACKS_FILE)
    if len(stacks.times_us):
        lines, eager = {}, {}
        for stack_id, frames in stacks.frames.items():
            user = stacks.user.get(stack_id)
            lines[stack_id] = f"{frames[user][0]}:{frames[user][1]}" if user is not None and user < len(frames) else ""
            # a step call runs through execute.py too (quick_execute): that is the step, not an eager op between steps
            eager[stack_id] = any(f[0].endswith(EAGER_MARKER) for f in frames) and not in_step_call(frames)
        truth.stack_times = stacks.times_us
        truth.stack_lines = [lines[int(s)] for s in stacks.stack_ids]
        truth.stack_eager = np.asarray([eager[int(s)] for s in stacks.stack_ids], dtype=bool)
        truth.stack_in_call = step_call_samples(stacks)
    pauses = read_gc_pauses(data / layout.GC_PAUSES_FILE)
    if len(pauses.starts):
        truth.gc_starts, truth.gc_ends = pauses.starts, pauses.starts + pauses.durations
    truth.cpu_usage_pct = _busy_pct(device_dir)
    return truth


def _busy_pct(device_dir: Path) -> Optional[float]:
    samples = read_host_samples(Path(device_dir))
    if samples is None or not samples.has("sys_cpu"):
        return None
    cpu = samples.columns["sys_cpu"]
    finite = cpu[np.isfinite(cpu).all(axis=1)]
    if len(finite) < 2:
        return None
    spent = finite[-1] - finite[0]
    total = float(spent.sum())
    return None if total <= 0 else 100.0 * (1.0 - float(spent[SYS_CPU_IDLE]) / total)
