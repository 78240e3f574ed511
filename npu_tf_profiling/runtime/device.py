"""Which device/rank id this process profiles as (the `device_<id>` folder and the Device_id column).

Order: in a multi-rank job (RANK_SIZE > 1) RANK_ID first, because Ascend launch
scripts set DEVICE_ID per host (every host has a device 0) while RANK_ID is
unique in the job; otherwise DEVICE_ID, then RANK_ID. Then the TF_CONFIG task
(chief first, then workers), else 0. Multi-worker runs therefore land in distinct
folders without any extra configuration.
"""
from __future__ import annotations

import json
import os
from typing import Mapping

TASK_TYPES_IN_RANK_ORDER = ("chief", "master", "worker")


def rank_from_tf_config(tf_config: str) -> int | None:
    try:
        parsed = json.loads(tf_config)
        task = parsed["task"]
        cluster = parsed.get("cluster", {})
        kind, index = task["type"], int(task["index"])
    except (ValueError, KeyError, TypeError):
        return None
    if kind not in TASK_TYPES_IN_RANK_ORDER:
        return None  # ps / evaluator do not train
    offset = 0
    for earlier in TASK_TYPES_IN_RANK_ORDER:
        if earlier == kind:
            break
        offset += len(cluster.get(earlier, []))
    return offset + index


def rank_size(environ: Mapping[str, str] | None = None) -> int | None:
    """How many training ranks the job has (RANK_SIZE, else TF_CONFIG's chief + workers), if known.

    Recorded in info.json so the cluster analysis can tell a rank that never wrote
    anything from one that does not exist.
    """
    environ = os.environ if environ is None else environ
    value = environ.get("RANK_SIZE", "").strip()
    if value.isdigit():
        return int(value)
    try:
        cluster = json.loads(environ.get("TF_CONFIG", "")).get("cluster", {})
    except (ValueError, AttributeError):
        return None
    count = sum(len(cluster.get(kind, [])) for kind in TASK_TYPES_IN_RANK_ORDER)
    return count or None


def device_id(environ: Mapping[str, str] | None = None) -> int:
    environ = os.environ if environ is None else environ
    multi_rank = (rank_size(environ) or 1) > 1 and environ.get("RANK_ID", "").strip().isdigit()
    for variable in ("RANK_ID", "DEVICE_ID") if multi_rank else ("DEVICE_ID", "RANK_ID"):
        value = environ.get(variable, "").strip()
        if value.isdigit():
            return int(value)
    rank = rank_from_tf_config(environ.get("TF_CONFIG", ""))
    return rank if rank is not None else 0
