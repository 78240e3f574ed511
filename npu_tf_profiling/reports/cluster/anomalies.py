"""Each rank's anomaly_capture anomalies side by side: did several ranks slow at the same iterations, or one alone?

Every rank detects its own anomalies (`runtime.anomaly_watch`, ``anomalies.jsonl``).
Here they are listed per rank, and grouped across ranks by their slow iterations
(stretches that overlap, or touch within SHARED_GAP iterations, are one group): a
group on several ranks points to a shared cause (input, the network, a common
host), a group on one rank to that rank. ``cluster`` writes the listing as
``anomalies.json`` and adds one note per group to its verdict.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from npu_tf_profiling.reports.anomalies import read_anomaly_lines
from npu_tf_profiling.reports.step import records as raw_mod

JSON_NAME = "anomalies.json"
SHARED_GAP = 1  # iterations: ranks of one job detect one slowdown an iteration apart now and then
MAX_NOTES = 10


def cluster_anomalies(folders: list[tuple[str, str]]) -> dict[str, Any]:
    """``{"ranks": {rank: [anomaly, ...]}, "groups": [{"first", "last", "ranks", "shared"}, ...]}``."""
    per_rank: dict[int, list[dict[str, Any]]] = {}
    for _, device_dir in folders:
        rank_id = raw_mod.read_info(Path(device_dir)).rank_id
        rank = rank_id if rank_id is not None else int(Path(device_dir).name.split("_")[-1])
        found = [a for a in read_anomaly_lines(Path(device_dir))
                 if a.get("kind") == "anomaly" and isinstance(a.get("first_slow"), int) and isinstance(a.get("last_slow"), int)]
        if found:
            per_rank[rank] = found
    spans = sorted((a["first_slow"], a["last_slow"], rank) for rank, found in per_rank.items() for a in found)
    groups: list[dict[str, Any]] = []
    for first, last, rank in spans:
        if groups and first <= groups[-1]["last"] + SHARED_GAP:
            group = groups[-1]
            group["last"] = max(group["last"], last)
            group["ranks"] = sorted(set(group["ranks"]) | {rank})
        else:
            groups.append({"first": first, "last": last, "ranks": [rank]})
    for group in groups:
        group["shared"] = len(group["ranks"]) > 1
    return {"ranks": {str(rank): found for rank, found in sorted(per_rank.items())}, "groups": groups}


def anomaly_notes(listing: dict[str, Any]) -> list[str]:
    """One verdict note per group (the first MAX_NOTES, then how many more)."""
    notes = []
    for group in listing["groups"][:MAX_NOTES]:
        span = f"iteration {group['first']}" if group["first"] == group["last"] else f"iterations {group['first']}..{group['last']}"
        ranks = ", ".join(map(str, group["ranks"]))
        why = (f"on {len(group['ranks'])} ranks ({ranks}) at once: a shared cause" if group["shared"]
               else f"on rank {ranks} alone")
        notes.append(f"anomaly_capture: {span} slow {why} (see {JSON_NAME})")
    if len(listing["groups"]) > MAX_NOTES:
        notes.append(f"anomaly_capture: {len(listing['groups']) - MAX_NOTES} more slow stretch(es) in {JSON_NAME}")
    return notes
