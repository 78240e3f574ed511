"""Question 4: which steps does each rank lack (never filled in, always listed)?"""
from __future__ import annotations

from typing import Any

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
    """Steps some ranks lack, per model: {"models": {model: {...}}, "total_missing": n}."""
    models: dict[str, Any] = {}
    total = 0
    for model, group in rows.groupby(cst.MODEL_ID, sort=True):
        present = {int(r): set(g[cst.STEP].astype(int).tolist()) for r, g in group.groupby(cst.INDEX)}
        union = set().union(*present.values())
        lo, hi = min(union), max(union)
        entry: dict[str, Any] = {"steps": len(union), "first_step": lo, "last_step": hi, "ranks": {}}
        for rank in all_ranks:
            own = present.get(rank, set())
            lacking = sorted(union - own)
            if not lacking:
                continue
            total += len(lacking)
            entry["ranks"][str(rank)] = {
                "count": len(lacking),
                "steps": step_ranges(lacking),
                "last_step": max(own) if own else None,
                "stopped_early": not own or max(own) < hi,  # the others went on after its last step
            }
        holes = sorted(set(range(lo, hi + 1)) - union)
        if holes:
            entry["absent_on_every_rank"] = {"count": len(holes), "steps": step_ranges(holes)}
        models[str(int(model))] = entry
    return {"models": models, "total_missing": total}
