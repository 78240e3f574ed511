"""Synthesise a long single-device step trace as the runtime writes it (training_trace.bin frames), fast.

For tests and benchmarks of the readers of long runs (``npu-tf-prof view`` on
100,000 iterations): every time is computed with numpy and written as
``raw_format.training_frame`` frames of ``FRAME_ROWS`` rows, so a 100k-iteration
folder takes a fraction of a second to make. Each iteration is laid end to
end: GetNext inside Data Aug Bound, one all-reduce from ``reduce_offset`` after
FP Start, then Iteration Refresh; ``noise`` scales every phase per iteration,
``spikes`` adds time to the FP to BP of chosen iterations, ``gap_spikes`` to their Data Aug Bound.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from npu_tf_profiling.raw_format import layout
from npu_tf_profiling.raw_format.prof_name import ProfName
from npu_tf_profiling.raw_format.training_frame import NO_STEP, RecordShape, encode_frame

T0_US = 1_700_000_000_000_000.0
FRAME_ROWS = 4_096  # the runtime's ring size: what one drain writes at most


@dataclass
class StepPlan:
    iterations: int = 1_000
    data_aug: float = 100.0
    get_next: float = 40.0
    fp_bp: float = 700.0
    reduce_offset: float = 600.0
    reduce: float = 300.0
    refresh: float = 200.0
    noise: float = 0.0  # relative, per phase and iteration
    spikes: dict[int, float] = field(default_factory=dict)  # 0-based iteration -> extra FP to BP µs
    gap_spikes: dict[int, float] = field(default_factory=dict)  # 0-based iteration -> extra Data Aug Bound µs
    seed: int = 0
    global_step: int | None = None  # the first iteration's global step (a step counter, as a data-parallel job records); None: none


def write_step_prof_dir(root: Path | str, plan: StepPlan, device_id: int = 0, model_id: int = 1) -> Path:
    """Write ``root/PROF_4242_20240102030405_SYNTHSTP/device_<id>/`` with ``plan``'s iterations; returns the PROF folder."""
    n = plan.iterations
    rng = np.random.default_rng(plan.seed)
    scale = (lambda: 1.0 + plan.noise * rng.standard_normal(n)) if plan.noise else (lambda: np.ones(n))
    aug, fp_bp, refresh = plan.data_aug * scale(), plan.fp_bp * scale(), plan.refresh * scale()
    for index, extra in plan.spikes.items():
        fp_bp[index] += extra
    for index, extra in plan.gap_spikes.items():
        aug[index] += extra
    ends = T0_US + np.cumsum(aug + fp_bp + refresh)
    fp = ends - refresh - fp_bp
    shape = RecordShape(get_next_pairs=1, has_fp=True, has_bp=True, reduce_pairs=1, has_step=plan.global_step is not None)
    rows = np.zeros(n, dtype=shape.dtype)
    rows["run"] = np.arange(1, n + 1)
    rows["step"] = NO_STEP if plan.global_step is None else plan.global_step + np.arange(n)
    gn_end = fp - 10.0
    reduce_start = fp + plan.reduce_offset
    rows["times"] = np.column_stack([gn_end - plan.get_next, gn_end, fp, fp + fp_bp, reduce_start, reduce_start + plan.reduce, ends])
    prof = Path(root) / str(ProfName(4242, "20240102030405", "SYNTHSTP"))
    device_dir = layout.device_dir(prof, device_id)
    (device_dir / layout.DATA_DIR).mkdir(parents=True, exist_ok=True)
    (device_dir / layout.INFO_FILE).write_text(json.dumps({"device_id": device_id}))
    with open(layout.training_frames_path(prof, device_id), "wb") as out:
        for lo in range(0, n, FRAME_ROWS):
            out.write(encode_frame(model_id, shape, rows[lo:lo + FRAME_ROWS]))
    return prof
