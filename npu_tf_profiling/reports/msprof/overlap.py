"""The "Overlap Analysis" intervals of each iteration: where its Computing, Communication and Free are.

torch_npu's timeline shows, per step, when the device computed, communicated
(and whether that was hidden behind compute) and idled; msprof-analyze and
MindStudio Insight sum those tracks into the step table. Ours are cut from the
step-trace points with the step table's own definitions
(``cluster.step_table``), so each track's total per iteration equals that
iteration's number in ``step_trace_time.csv``:

* window W = [iteration start, Iteration End];
* Communication = the union of the iteration's Reduce intervals, inside W;
* Computing = [FP Start, BP End] plus the part of [BP End, Iteration End] not in Communication;
* Communication(Not Overlapped) = Communication outside [FP Start, BP End];
* Free = the rest of W.

An iteration without FP/BP points gets only its Communication intervals.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from npu_tf_profiling.reports.cluster import step_table as cst
from npu_tf_profiling.reports.msprof import intervals as iv
from npu_tf_profiling.reports.msprof.rank_model import BP_US, END_US, FP_US, START_US

COMPUTING = "Computing"
COMMUNICATION = "Communication"
NOT_OVERLAPPED = "Communication(Not Overlapped)"
FREE = "Free"
KINDS = (COMPUTING, COMMUNICATION, NOT_OVERLAPPED, FREE)


@dataclass
class StepOverlap:
    step: int
    model_id: int
    spans: dict[str, list[iv.Interval]]


def step_overlaps(steps: pd.DataFrame, comm_ops: pd.DataFrame) -> list[StepOverlap]:
    """One ``StepOverlap`` per iteration with a known window, in ``steps`` order."""
    reduces: dict[tuple[int, int], list[iv.Interval]] = {}
    for op in comm_ops.itertuples(index=False):
        reduces.setdefault((int(op.model_id), int(op.step)), []).append((float(op.start_us), float(op.end_us)))
    out = []
    columns = [steps[c].to_numpy(dtype="float64") for c in (cst.MODEL_ID, cst.STEP, START_US, END_US, FP_US, BP_US)]
    for model, step, start, end, fp, bp in zip(*columns):
        if math.isnan(start) or math.isnan(end):
            continue
        key = (int(model), int(step))
        comm = iv.clip(reduces.get(key, []), start, end)
        spans: dict[str, list[iv.Interval]] = {kind: [] for kind in KINDS}
        spans[COMMUNICATION] = comm
        if not (math.isnan(fp) or math.isnan(bp)):
            forward_backward = iv.clip([(fp, bp)], start, end)
            spans[COMPUTING] = iv.normalize(forward_backward + iv.subtract(iv.clip([(bp, end)], start, end), comm))
            spans[NOT_OVERLAPPED] = iv.subtract(comm, [(fp, bp)])
            spans[FREE] = iv.subtract([(start, end)], spans[COMPUTING] + comm)
        out.append(StepOverlap(step=key[1], model_id=key[0], spans=spans))
    return out
