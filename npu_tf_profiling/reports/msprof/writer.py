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
from typing import Callable, Optional

from npu_tf_profiling.raw_format import layout
from npu_tf_profiling.reports.step import records as raw_mod
from npu_tf_profiling.reports.msprof import communication_json, kernel_details, names, profiler_info, step_trace_time
from npu_tf_profiling.reports.msprof import trace_view
from npu_tf_profiling.reports.msprof.analysis_db import write_analysis_db
from npu_tf_profiling.reports.msprof.profiler_db import write_profiler_db
from npu_tf_profiling.reports.msprof.rank_model import RankModel, build_rank_model, device_table, host_of
from npu_tf_profiling.reports.prof_dir import ProfData
from npu_tf_profiling.reports.task.table import load_device_tasks
from npu_tf_profiling.raw_format import own_files
from npu_tf_profiling.raw_format.atomic import atomic_write_text
from npu_tf_profiling.raw_format.run_info import RunInfo


# Above this many events (iterations + all-reduce groups + tasks) a rank gets only what msprof-analyze's
# cluster analysis reads: it reads the databases whenever a folder has one (db mode:
# ascend_pytorch_profiler_<rank>.db, analysis.db, and profiler_info_<rank>.json for the rank), never the
# text copies (trace_view.json, communication.json, communication_matrix.json, step_trace_time.csv);
# MindStudio Insight opens the database too. They cost about 2.4 KB and 0.1 ms an iteration (one Python object per event),
# so past this size they would only add minutes, memory and, past some 140,000 iterations, files too
# big to open. 50,000 events: some 25,000 iterations of one all-reduce, about 60 MB of JSON.
TEXT_LAYOUT_MAX_EVENTS = 50_000


def is_long(model: RankModel) -> bool:
    """Whether the rank is too long for the text-only files (``TEXT_LAYOUT_MAX_EVENTS``)."""
    events = len(model.steps) + len(model.comm_ops) + (0 if model.tasks is None else len(model.tasks))
    return events > TEXT_LAYOUT_MAX_EVENTS


TEXT_COPIES = (names.TRACE_VIEW_JSON, names.COMMUNICATION_JSON, names.COMMUNICATION_MATRIX_JSON, names.STEP_TRACE_TIME_CSV)


def long_rank_note(model: RankModel, folder: Path) -> str:
    return (f"rank {model.rank}: {len(model.steps)} iterations: the text copies ({', '.join(TEXT_COPIES)}) left out of "
            f"{folder}: over {TEXT_LAYOUT_MAX_EVENTS} events msprof-analyze and MindStudio Insight read the rank's "
            f"databases, and the reports' step_trace_<ts>.csv/.json hold the same steps")


BOTH_EXPORTS = frozenset(("text", "db"))


def write_rank_folder(model: RankModel, folder: Path, exports: frozenset[str] = BOTH_EXPORTS) -> list[Path]:
    """Write one rank's folder; returns the written files (a stale kernel_details.csv is removed).

    The folder's name is predictable and it sits in the user's output folder, so it
    is made (or checked to be a real folder, not a planted link) before anything goes in.
    A long rank (``is_long``) gets the database files msprof-analyze reads, not the
    text-only copies of them. ``exports`` (the ``export_type`` option) leaves out the
    text files or the databases; ``profiler_info_<rank>.json`` and
    ``profiler_metadata.json`` are always written: both modes of msprof-analyze
    find the rank by them. A file left out is removed, so a rewrite leaves no stale one.
    """
    own_files.make_dir(folder)
    out = names.profiler_output_dir(folder)
    text_copies = "text" in exports and not is_long(model)
    has_tasks = model.tasks is not None and len(model.tasks) > 0
    # Each text is built when its turn comes, so only one file's text is in memory at a time.
    texts: list[tuple[Path, Optional[Callable[[], Optional[str]]]]] = [
        (folder / names.profiler_info_name(model.rank), lambda: profiler_info.profiler_info_json(model)),
        (folder / names.PROFILER_METADATA_JSON, lambda: profiler_info.profiler_metadata_json(model)),
        (out / names.TRACE_VIEW_JSON, lambda: trace_view.trace_view_json(model)),
        (out / names.COMMUNICATION_JSON, lambda: communication_json.communication_json(model)),
        (out / names.COMMUNICATION_MATRIX_JSON, lambda: communication_json.communication_matrix_json(model)),
        (out / names.KERNEL_DETAILS_CSV, (lambda: kernel_details.kernel_details_csv(model.tasks)) if has_tasks else None),
    ]
    if not text_copies:
        texts = [(path, None if path.name in TEXT_COPIES else build) for path, build in texts]
    if "text" not in exports:
        texts = [(path, None if path.name == names.KERNEL_DETAILS_CSV else build) for path, build in texts]
    written = []
    if text_copies:
        step_trace_time.write_step_trace_time_csv(model.steps, out / names.STEP_TRACE_TIME_CSV)
        written.append(out / names.STEP_TRACE_TIME_CSV)
    else:
        own_files.remove(out / names.STEP_TRACE_TIME_CSV)
    for path, build in texts:
        text = None if build is None else build()
        if text is None:
            own_files.remove(path)
            continue
        atomic_write_text(path, text)
        written.append(path)
    for path, write in ((out / names.profiler_db_name(model.rank), write_profiler_db), (out / names.ANALYSIS_DB, write_analysis_db)):
        if "db" not in exports:
            own_files.remove(path)
            continue
        write(model, path)
        written.append(path)
    return written


def rank_model_of(data: ProfData, device: raw_mod.DeviceRaw) -> RankModel:
    """The model of one device of a loaded PROF folder (its step rows and, if recorded, its tasks)."""
    tasks = load_device_tasks(device.device_dir, device.device_id, device.info, device.trace)
    return build_rank_model(device.device_id, data.prof_dir, device.info, device_table(data.table, device.device_id), tasks)


def write_prof_dir_layouts(data: ProfData, notes: Optional[list[str]] = None, exports: frozenset[str] = BOTH_EXPORTS) -> list[Path]:
    """Write the rank folder of every device of ``data`` that has iteration records; returns the folders.

    ``exports``: the ``export_type`` option, as ``write_rank_folder`` takes it.

    A line for the user goes to ``notes`` for each long rank (what was left out, and why).
    """
    folders: list[Path] = []
    for device in data.devices:
        if device.trace is None or device.trace.frame.empty:
            continue
        model = rank_model_of(data, device)
        folder = names.rank_folder(data.prof_dir, model.host, model.rank)
        write_rank_folder(model, folder, exports)
        folders.append(folder)
        if notes is not None and is_long(model):
            notes.append(long_rank_note(model, folder) if "db" in exports else
                         f"rank {model.rank}: {len(model.steps)} iterations: {folder} holds only the rank's profiler_info: "
                         f"over {TEXT_LAYOUT_MAX_EVENTS} events the text copies are left out (msprof-analyze reads the "
                         f"databases), and export_type text leaves out the databases")
    return folders


def is_stale(prof_dir: Path, rank: int, device_dir: Path, info: RunInfo) -> bool:
    """Whether a rank's folder is missing or older than its raw data (then it must be rewritten)."""
    folder = names.rank_folder(prof_dir, host_of(info), rank)
    db = names.profiler_output_dir(folder) / names.profiler_db_name(rank)
    if not db.is_file():
        return True
    raw_files = [*layout.training_trace_files(device_dir), device_dir / layout.DATA_DIR / layout.TASK_TRACE_FILE]
    newest = max((os.stat(p).st_mtime for p in raw_files if p.is_file()), default=0.0)
    return db.stat().st_mtime < newest
