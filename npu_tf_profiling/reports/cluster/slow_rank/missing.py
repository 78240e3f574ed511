"""Question 4: which steps does each rank lack (never filled in, always listed)?"""
from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from npu_tf_profiling.reports.cluster import step_table as cst


def step_ranges(steps: list[int]) -> str:
    """[1, 2, 3, 7, 9, 10] -> '1-3, 7, 9-10' (steps sorted ascending)."""
    spans: list[list[int]] = []
    for step in steps:
        if spans and step == spans[-1][1] + 1:
            spans[-1][1] = step
        else:
            spans.append([step, step])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in spans)


def missing_steps(rows: pd.DataFrame, all_ranks: list[int]) -> dict[str, Any]:
    """Steps some ranks lack, per model: {"models": {model: {...}}, "total_missing": n}.

    One (rank x step) presence matrix per model (a byte per cell), so thousands
    of ranks cost a few vectorised passes; Python only touches the ranks that lack steps.
    """
    models: dict[str, Any] = {}
    total = 0
    ranks = np.asarray(sorted(set(all_ranks) | set(rows[cst.INDEX].astype("int64").unique().tolist())), dtype=np.int64)
    order = {int(r): i for i, r in enumerate(ranks)}
    for model, group in rows.groupby(cst.MODEL_ID, sort=True):
        steps = group[cst.STEP].to_numpy(dtype=np.int64)
        union = np.unique(steps)
        present = np.zeros((len(ranks), len(union)), dtype=bool)
        present[np.searchsorted(ranks, group[cst.INDEX].to_numpy(dtype=np.int64)), np.searchsorted(union, steps)] = True
        lo, hi = int(union[0]), int(union[-1])
        entry: dict[str, Any] = {"steps": len(union), "first_step": lo, "last_step": hi, "ranks": {}}
        lacking_counts = len(union) - present.sum(axis=1)
        for rank in all_ranks:
            i = order[int(rank)]
            if not lacking_counts[i]:
                continue
            lacking = union[~present[i]].tolist()
            own = union[present[i]]
            last = int(own[-1]) if len(own) else None
            total += len(lacking)
            entry["ranks"][str(rank)] = {
                "count": len(lacking),
                "steps": step_ranges(lacking),
                "last_step": last,
                "stopped_early": last is None or last < hi,  # the others went on after its last step
            }
        if hi - lo + 1 > len(union):
            holes = np.setdiff1d(np.arange(lo, hi + 1), union).tolist()
            entry["absent_on_every_rank"] = {"count": len(holes), "steps": step_ranges(holes)}
        models[str(int(model))] = entry
    return {"models": models, "total_missing": total}
