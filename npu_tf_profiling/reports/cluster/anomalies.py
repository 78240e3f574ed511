"""Each rank's anomaly_capture anomalies side by side: did several ranks slow at the same iterations, or one alone?

Every rank detects its own anomalies (`runtime.anomaly_watch`, ``anomalies.jsonl``).
Here they are listed per rank, and grouped across ranks by their slow iterations
(stretches that overlap, or touch within SHARED_GAP iterations, are one group): a
group on several ranks points to a shared cause (input, the network, a common
host), a group on one rank to that rank. ``cluster`` writes the listing as
``anomalies.json`` and adds one note per group to its verdict.

In a synchronous job one rank's slowdown is every rank's: the others wait for it in
the all-reduce, so each detects the same stretch. So a group on several ranks is
judged by each rank's own time (FP to BP + Data Aug Bound, not the wait) over the
stretch against its median elsewhere: when only some ranks' own time grew (at least
OWN_SHARE of the largest growth), the group names them (``own_time_grew``) and is not
called shared unless they are several.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Optional

import numpy as np
import pandas as pd

from npu_tf_profiling.reports.anomalies import read_anomaly_lines
from npu_tf_profiling.reports.cluster import step_table as cst
from npu_tf_profiling.reports.step import records as raw_mod

JSON_NAME = "anomalies.json"
SHARED_GAP = 1  # iterations: ranks of one job detect one slowdown an iteration apart now and then
MAX_NOTES = 10
OWN_SHARE = 0.5  # a rank whose own time grew by this share of the largest growth in the group is among the causes
# A growth counts only past the rank's own noise elsewhere (robust sigmas) and this share of its median own time.
NOISE_SIGMAS, NOISE_SHARE = 3.0, 0.05


def cluster_anomalies(folders: list[tuple[str, str]], rows: Optional[pd.DataFrame] = None) -> dict[str, Any]:
    """``{"ranks": {rank: [anomaly, ...]}, "groups": [{"first", "last", "ranks", "shared", ...}, ...]}``.

    ``rows``: the cluster's step rows (Index, Step, FP to BP Time, Data Aug Bound), to tell in a group on
    several ranks whose own time grew (module docstring); without them, several ranks means shared."""
    per_rank: dict[int, list[dict[str, Any]]] = {}
    for _, device_dir in folders:
        rank_id = raw_mod.read_info(Path(device_dir)).rank_id
        rank = rank_id if rank_id is not None else int(Path(device_dir).name.split("_")[-1])
        found = [a for a in read_anomaly_lines(Path(device_dir))
                 if a.get("kind") == "anomaly" and isinstance(a.get("first_slow"), int) and isinstance(a.get("last_slow"), int)]
        if found:
            per_rank[rank] = found
    spans = sorted((a["first_slow"], a["last_slow"], rank, a.get("model_id")) for rank, found in per_rank.items() for a in found)
    groups: list[dict[str, Any]] = []
    models: list[set[object]] = []  # per group: the Model IDs of its anomalies (whose rows `_own_growth` reads)
    for first, last, rank, model in spans:
        if groups and first <= groups[-1]["last"] + SHARED_GAP:
            group = groups[-1]
            group["last"] = max(group["last"], last)
            group["ranks"] = sorted(set(group["ranks"]) | {rank})
            models[-1].add(model)
        else:
            groups.append({"first": first, "last": last, "ranks": [rank]})
            models.append({model})
    for group, group_models in zip(groups, models):
        group["shared"] = len(group["ranks"]) > 1
        grew = _own_growth(rows, group, group_models) if group["shared"] else None
        if grew:
            top = max(grew.values())
            group["own_growth_us"] = {str(rank): round(us, 1) for rank, us in sorted(grew.items())}
            group["own_time_grew"] = sorted(rank for rank, us in grew.items() if us >= OWN_SHARE * top)
            group["shared"] = len(group["own_time_grew"]) > 1
    return {"ranks": {str(rank): found for rank, found in sorted(per_rank.items())}, "groups": groups}


def _own_growth(rows: Optional[pd.DataFrame], group: dict[str, Any], models: set[object]) -> Optional[dict[int, float]]:
    """Per rank of the group: its mean own time (FP to BP + Data Aug Bound) over the stretch less its median
    elsewhere, µs, in the rows of the anomalies' models; None without rows, or when no rank's own time grew past its noise."""
    if rows is None or not len(rows):
        return None
    rows = rows[rows[cst.MODEL_ID].isin(models) & rows[cst.INDEX].isin(group["ranks"])]  # one pass per group, not per rank
    own = rows[cst.FP_TO_BP].astype("float64").fillna(0.0) + rows[cst.DATA_AUG_BOUND].astype("float64").fillna(0.0)
    inside = rows[cst.STEP].between(group["first"], group["last"])
    rank = rows[cst.INDEX]
    elsewhere = own[~inside]
    median = elsewhere.groupby(rank[~inside]).median()
    spread = 1.4826 * (elsewhere - median.reindex(rank[~inside]).to_numpy()).abs().groupby(rank[~inside]).median()  # MAD as σ
    grew = (own[inside].groupby(rank[inside]).mean() - median).dropna()
    if grew.empty:
        return None
    noise = np.maximum(NOISE_SIGMAS * spread.reindex(grew.index), NOISE_SHARE * median.reindex(grew.index))
    return {int(r): float(us) for r, us in grew.items()} if bool((grew > noise).any()) else None


def anomaly_notes(listing: dict[str, Any]) -> list[str]:
    """One verdict note per group (the first MAX_NOTES, then how many more)."""
    notes = []
    for group in listing["groups"][:MAX_NOTES]:
        span = f"iteration {group['first']}" if group["first"] == group["last"] else f"iterations {group['first']}..{group['last']}"
        ranks = ", ".join(map(str, group["ranks"]))
        causes = group.get("own_time_grew")
        if causes is not None and len(causes) < len(group["ranks"]):
            named = ", ".join(f"{r} (+{group['own_growth_us'][str(r)]:,.0f} us)" for r in causes)
            why = (f"on {len(group['ranks'])} ranks ({ranks}) at once, but only the own time (FP to BP + Data Aug Bound) of "
                   f"rank{'s' if len(causes) > 1 else ''} {named} an iteration grew: the others waited for it in the all-reduce"
                   + ("" if group["shared"] else ", a slow rank, not a shared cause"))
        elif group["shared"]:
            why = f"on {len(group['ranks'])} ranks ({ranks}) at once: a shared cause"
        else:
            why = f"on rank {ranks} alone"
        notes.append(f"anomaly_capture: {span} slow {why} (see {JSON_NAME})")
    if len(listing["groups"]) > MAX_NOTES:
        notes.append(f"anomaly_capture: {len(listing['groups']) - MAX_NOTES} more slow stretch(es) in {JSON_NAME}")
    return notes
