"""The ops whose time per iteration changed most, when both runs were task-traced.

Per side, each (Model ID, op name, op type) gets its Total Time from
``op_summary`` (the numbers of ``op_summary_*.csv``), summed over the
devices, divided by the task-traced iterations of that model on those
devices: the op's time per traced iteration. An op on one side only counts 0
on the other (it appeared, or went away). Only a few iterations are usually
traced, so this is a pointer to where to look, with no interval.
"""
from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from npu_tf_profiling.reports.task import op_summary as ops
from npu_tf_profiling.reports.run_input import RunInput, task_tables

TOP_OPS = 10


@dataclass
class OpChange:
    name: str
    op_type: str
    baseline_us: float  # per traced iteration (0: not on this side)
    candidate_us: float

    @property
    def change_us(self) -> float:
        return self.candidate_us - self.baseline_us


def per_iteration(found: RunInput) -> dict[int, pd.Series]:
    """Model ID -> µs per traced iteration, indexed by (op name, op type); empty without task traces."""
    totals: dict[int, list[pd.Series]] = {}
    traced: dict[int, int] = {}
    for data in found.loaded:
        for table in task_tables(data).values():
            frame = ops.op_summary_frame(table)
            its = table.iterations
            for model_id, rows in frame.groupby(ops.MODEL_ID, sort=True):
                model = int(model_id)
                traced[model] = traced.get(model, 0) + int((its[(its["model_id"] == model) & (its["n_tasks"] > 0)]).shape[0])
                totals.setdefault(model, []).append(
                    rows.set_index([ops.OP_NAME, ops.OP_TYPE])[ops.TOTAL_TIME].astype("float64"))
    out = {}
    for model, parts in totals.items():
        if traced.get(model):
            out[model] = pd.concat(parts).groupby(level=[0, 1]).sum() / traced[model]
    return out


def op_changes(baseline: pd.Series, candidate: pd.Series, top: int = TOP_OPS) -> list[OpChange]:
    """The ``top`` ops with the largest |change| in µs per traced iteration."""
    both = pd.concat([baseline.rename("b"), candidate.rename("c")], axis=1).fillna(0.0)
    both = both.assign(_size=(both["c"] - both["b"]).abs()).sort_values("_size", ascending=False, kind="mergesort")
    return [OpChange(str(name), str(op_type), float(row.b), float(row.c))
            for (name, op_type), row in both.head(top).iterrows() if row._size > 0]
