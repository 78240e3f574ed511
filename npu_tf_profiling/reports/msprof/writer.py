"""Write the msprof-analyze / MindStudio Insight folder of every rank of a PROF folder.

Called with our own reports (``reports.writer.write_all_reports``: at session
close, at exit, by ``npu-tf-prof report``) and by ``npu-tf-prof cluster`` for
ranks whose folder is missing or older than their raw data (a rank that died
never wrote its reports). Every file is written whole under a temporary name
and moved into place, so rewriting replaces a folder's files one by one and a
reader never sees half a file.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Optional

from npu_tf_profiling.raw_format import layout
from npu_tf_profiling.reports.step import records as raw_mod
from npu_tf_profiling.reports.cluster.data import ClusterData
from npu_tf_profiling.reports.msprof import communication_json, kernel_details, names, profiler_info, step_trace_time
from npu_tf_profiling.reports.msprof import trace_view
from npu_tf_profiling.reports.msprof.analysis_db import write_analysis_db
from npu_tf_profiling.reports.msprof.profiler_db import write_profiler_db
from npu_tf_profiling.reports.msprof.rank_model import RankModel, build_rank_model, device_table, host_of
from npu_tf_profiling.reports.prof_dir import ProfData
from npu_tf_profiling.reports.task.table import load_device_tasks
from npu_tf_profiling.raw_format import own_files
from npu_tf_profiling.raw_format.atomic import atomic_write_text


def write_rank_folder(model: RankModel, folder: Path) -> list[Path]:
    """Write one rank's folder; returns the written files (a stale kernel_details.csv is removed).

    The folder's name is predictable and it sits in the user's output folder, so it
    is made (or checked to be a real folder, not a planted link) before anything goes in.
    """
    own_files.make_dir(folder)
    out = names.profiler_output_dir(folder)
    texts: list[tuple[Path, Optional[str]]] = [
        (folder / names.profiler_info_name(model.rank), profiler_info.profiler_info_json(model)),
        (folder / names.PROFILER_METADATA_JSON, profiler_info.profiler_metadata_json(model)),
        (out / names.STEP_TRACE_TIME_CSV, step_trace_time.step_trace_time_csv(model.steps)),
        (out / names.TRACE_VIEW_JSON, trace_view.trace_view_json(model)),
        (out / names.COMMUNICATION_JSON, communication_json.communication_json(model)),
        (out / names.COMMUNICATION_MATRIX_JSON, communication_json.communication_matrix_json(model)),
        (
            out / names.KERNEL_DETAILS_CSV,
            kernel_details.kernel_details_csv(model.tasks) if model.tasks is not None and len(model.tasks) else None,
        ),
    ]
    written = []
    for path, text in texts:
        if text is None:
            own_files.remove(path)
            continue
        atomic_write_text(path, text)
        written.append(path)
    for path, write in ((out / names.profiler_db_name(model.rank), write_profiler_db), (out / names.ANALYSIS_DB, write_analysis_db)):
        write(model, path)
        written.append(path)
    return written


def rank_model_of(data: ProfData, device: raw_mod.DeviceRaw) -> RankModel:
    """The model of one device of a loaded PROF folder (its step rows and, if recorded, its tasks)."""
    tasks = load_device_tasks(device.device_dir, device.device_id, device.info, device.trace)
    return build_rank_model(device.device_id, data.prof_dir, device.info, device_table(data.table, device.device_id), tasks)


def write_prof_dir_layouts(data: ProfData) -> list[Path]:
    """Write the rank folder of every device of ``data`` that has iteration records; returns the folders."""
    folders: list[Path] = []
    for device in data.devices:
        if device.trace is None or device.trace.frame.empty:
            continue
        model = rank_model_of(data, device)
        folder = names.rank_folder(data.prof_dir, model.host, model.rank)
        write_rank_folder(model, folder)
        folders.append(folder)
    return folders


def is_stale(prof_dir: Path, rank: int, device_dir: Path, info: dict[str, Any]) -> bool:
    """Whether a rank's folder is missing or older than its raw data (then it must be rewritten)."""
    folder = names.rank_folder(prof_dir, host_of(info), rank)
    db = names.profiler_output_dir(folder) / names.profiler_db_name(rank)
    if not db.is_file():
        return True
    raw_files = [*layout.training_trace_files(device_dir), device_dir / layout.DATA_DIR / layout.TASK_TRACE_FILE]
    newest = max((os.stat(p).st_mtime for p in raw_files if p.is_file()), default=0.0)
    return db.stat().st_mtime < newest


def write_stale_rank_layouts(cluster: ClusterData) -> list[int]:
    """Write the folder of every rank of a cluster whose folder is missing or stale; returns those ranks.

    A worker that was killed never wrote its reports; the cluster analysis has
    already read its raw data, so its folder is built from that.
    """
    rewritten = []
    for data in cluster.ranks:
        if not is_stale(data.prof_dir, data.rank, data.device_dir, data.info):
            continue
        tasks = load_device_tasks(data.device_dir, data.rank, data.info, data.trace)
        model = build_rank_model(data.rank, data.prof_dir, data.info, device_table(cluster.table, data.rank), tasks)
        write_rank_folder(model, names.rank_folder(data.prof_dir, model.host, model.rank))
        rewritten.append(data.rank)
    return rewritten
