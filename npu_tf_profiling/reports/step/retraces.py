"""Which iterations ran a call that retraced its step: named, and left out of the statistics like warm-up.

The runtime writes each call of a training step that traced a new concrete
function to other_runs.jsonl, from the call's start to the trace's end
(``raw_format.other_runs``, kind "retrace"). The iteration it ran is its
model's first row that ends after the call started: the rows before it ended
before the call (a step's calls run one after another). Its cost is the call's
time before that row's FP Start (tracing, then the new function's set-up): the
part of its Data Aug Bound the retrace took; without an FP Start, the trace.
"""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import numpy as np
import pandas as pd

from npu_tf_profiling.raw_format import layout
from npu_tf_profiling.raw_format.other_runs import OtherRuns, Retrace, read_other_runs
from npu_tf_profiling.raw_format.run_info import RunInfo


def retraced_rows(frame: pd.DataFrame, device_dir: Path, info: RunInfo) -> np.ndarray:
    """Per row of a device's raw frame (``records.TraceRead.frame``): what retraced there, in words ("" nothing)."""
    out = np.full(len(frame), "", dtype=object)
    if not info.other_runs_recorded or frame.empty:
        return out
    runs = read_other_runs(Path(device_dir) / layout.DATA_DIR / layout.OTHER_RUNS_FILE)
    return mark_retraces(frame, runs, info, out)


def mark_retraces(frame: pd.DataFrame, runs: OtherRuns, info: RunInfo, out: np.ndarray) -> np.ndarray:
    """Fill ``out`` (one string per row of ``frame``) with each retrace's words at the row it ran."""
    models = frame[layout.K_MODEL_ID].to_numpy()
    ends = frame[layout.K_ITERATION_END].to_numpy(dtype="float64")
    fp = frame[layout.K_FP_START].to_numpy(dtype="float64")
    for retrace in runs.retraces:
        model_id = retrace.model_id if retrace.model_id is not None else _model_of(retrace.function, info)
        rows = np.flatnonzero(models == model_id) if model_id is not None else np.zeros(0, dtype=np.int64)
        later = rows[ends[rows] > retrace.start_us]
        if not len(later):
            continue
        row = int(later[np.argmin(ends[later])])
        out[row] = "; ".join(filter(None, [out[row], describe(retrace, fp[row])]))
    return out


def describe(retrace: Retrace, fp_start_us: float) -> str:
    """``retrace of train_step (x: float32[4,8]): 0.213 s``: the call's time before the step ran."""
    until = fp_start_us if np.isfinite(fp_start_us) and fp_start_us >= retrace.end_us else retrace.end_us
    return f"retrace of {retrace.function} ({retrace.signature}): {max(until - retrace.start_us, 0.0) / 1e6:.3f} s"


def _model_of(function: str, info: RunInfo) -> Optional[int]:
    """The one model whose info.json entry names `function` (a line written without its Model ID)."""
    found = [int(k) for k, entry in info.models.items()
             if isinstance(entry, dict) and entry.get("function") == function and str(k).isdigit()]
    return found[0] if len(found) == 1 else None
