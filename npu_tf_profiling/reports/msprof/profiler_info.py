"""``profiler_info_<rank>.json`` and ``profiler_metadata.json`` of a rank folder.

msprof-analyze takes a text layout's rank from the **file name**
``profiler_info_<rank>.json``; ``compare`` reads ``config.experimental_config``
from it. The content is ours, documented in ``docs/msprof_layout.md``: rank,
device, host, pid, the recorded time range (``start_info`` / ``end_info``, ns
and µs since the Unix epoch), the versions, the profiling options the run used,
and the PROF folder the data came from.

``profiler_metadata.json`` carries ``parallel_group_info``: msprof-analyze
names communication groups from it (group ``hccl_world_group``, the gradient
all-reduce among all ranks, is ``dp``). It is written only when info.json
records the job's size.
"""
from __future__ import annotations

import functools

import json
from importlib import metadata
from typing import Any, Optional

from npu_tf_profiling.reports.msprof import comm_names
from npu_tf_profiling.reports.msprof.rank_model import RankModel

EXPORT_TYPES = ["text", "db"]
DISTRIBUTION = "npu-tf-profiling"


@functools.lru_cache(maxsize=None)
def our_version() -> str:
    """The installed npu-tf-profiling version (``unknown`` when run from a checkout that was never installed).

    Kept: every rank's folder names it, and reading the installed metadata costs about 1 ms each time."""
    try:
        return metadata.version(DISTRIBUTION)
    except metadata.PackageNotFoundError:
        return "unknown"


def profiler_info(model: RankModel) -> dict[str, Any]:
    start_ns, end_ns = model.time_range_ns()
    return {
        "rank_id": model.rank,
        "device_id": model.rank,
        "device_kind": model.device_kind,
        "host": model.host,
        "pid": model.pid,
        "start_info": {"start_time_ns": start_ns, "start_time_us": start_ns // 1000},
        "end_info": {"end_time_ns": end_ns, "end_time_us": end_ns // 1000},
        "framework": "TensorFlow",
        "tensorflow_version": model.info.tensorflow_version,
        "npu_tf_profiling_version": our_version(),
        "source": str(model.prof_dir.name),
        "config": {
            "common_config": {"profiling_options": model.info.options},
            "experimental_config": {"_export_type": EXPORT_TYPES},
        },
    }


def parallel_group_info(model: RankModel) -> Optional[dict[str, Any]]:
    """``{group id: {group_name, group_rank, global_ranks}}`` for the world group, or None."""
    size = model.rank_size
    if size is None:
        return None
    return {comm_names.WORLD_GROUP: {"group_name": "dp", "group_rank": model.rank, "global_ranks": list(range(size))}}


def profiler_info_json(model: RankModel) -> str:
    return json.dumps(profiler_info(model), indent=2) + "\n"


def profiler_metadata_json(model: RankModel) -> Optional[str]:
    groups = parallel_group_info(model)
    if groups is None:
        return None
    return json.dumps({"parallel_group_info": groups}, indent=2) + "\n"
