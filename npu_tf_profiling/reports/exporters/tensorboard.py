"""The step phases as TensorBoard scalars: one run per (rank, model), step = Iteration ID.

TensorBoard then shows where each iteration's time goes beside the user's own
loss curves. Written with TensorBoard's own record writer and ``Event`` /
``Summary`` protobufs (``tensorboard.summary.writer.record_writer``,
``tensorboard.compat.proto``), never with TensorFlow: its ``EventFileWriter``
reaches ``tf.io.gfile``, which would import TensorFlow into the reports.
tensorboard is an optional dependency (``npu_tf_profiling[tensorboard]``;
every TensorFlow install has it); without it, a ``MissingDependencyError``
says how to install it.

Layout, under the logdir::

    rank_<r>_model_<m>/events.out.tfevents.<first end, s>.<PROF folder>.npu_tf_profiling

One event per iteration: ``wall_time`` its Iteration End (seconds since the
epoch, so TensorBoard's wall-time axis lines up with the user's summaries),
``step`` its Iteration ID, and one ``simple_value`` per phase it measured
(``TAGS``, µs; an N/A phase has no value that step). The file's name is fixed
per PROF folder and it is replaced whole (``raw_format.atomic``), so writing
again (each session close, ``npu-tf-prof report``) never duplicates a point.
Two jobs into one logdir write two files into one run, and TensorBoard drops
the older one's points when the steps start again: give each job its own
logdir, as for the user's summaries.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from npu_tf_profiling.raw_format import layout
from npu_tf_profiling.raw_format.atomic import AtomicFile
from npu_tf_profiling.reports.errors import BadInputError, MissingDependencyError, NothingFoundError
from npu_tf_profiling.reports.exporters import Exporter, ExportJob
from npu_tf_profiling.reports.prof_dir import ProfData, load_prof_dir
from npu_tf_profiling.reports.report_paths import ReportPaths
from npu_tf_profiling.reports.step import table as st

INSTALL_HINT = "pip install 'npu_tf_profiling[tensorboard]' (or: pip install tensorboard)"
TAG_PREFIX = layout.TENSORBOARD_TAG_PREFIX
REDUCE_TAG = f"{TAG_PREFIX}Reduce Duration(us)"  # summed over the all-reduce groups
# Tag -> step-trace column, in the CSV's order.
TAGS = {f"{TAG_PREFIX}{column}": column for column in (st.ITERATION_TIME, st.FP_TO_BP, st.ITERATION_REFRESH, st.DATA_AUG_BOUND, st.GETNEXT_TIME)}
FILE_VERSION = layout.TENSORBOARD_FILE_VERSION


@dataclass
class RunWritten:
    """One run's event file: where, and how many iterations it holds."""

    run: str
    path: Path
    iterations: int


def run_name(rank: int, model_id: int) -> str:
    return layout.TENSORBOARD_RUN.format(rank=rank, model_id=model_id)


def _protos() -> tuple[Any, Any, Any]:
    """(event_pb2, summary_pb2, RecordWriter), or ``MissingDependencyError`` with the install line."""
    try:
        from tensorboard.compat.proto import event_pb2, summary_pb2
        from tensorboard.summary.writer.record_writer import RecordWriter
    except ImportError as exc:
        raise MissingDependencyError(f"TensorBoard event files are written with the tensorboard package, which is not "
                                     f"installed ({exc}); {INSTALL_HINT}") from None
    return event_pb2, summary_pb2, RecordWriter


def write_runs(data: ProfData, logdir: Path | str) -> list[RunWritten]:
    """Write one run per (device, model) of a loaded PROF folder into ``logdir``."""
    event_pb2, summary_pb2, record_writer = _protos()
    logdir = Path(logdir)
    frame = data.table.frame.assign(**{REDUCE_TAG: data.table.total_reduce().to_numpy()})
    columns = dict(TAGS, **{REDUCE_TAG: REDUCE_TAG})
    written = []
    for (device_id, model_id), rows in frame.groupby([st.DEVICE_ID, st.MODEL_ID], sort=True):
        steps = rows[st.ITERATION_ID_COL].astype("int64").to_numpy()
        ends = rows[st.ITERATION_END].astype("float64").to_numpy(dtype="float64", na_value=np.nan) / 1e6
        values = {tag: rows[column].astype("float64").to_numpy(dtype="float64", na_value=np.nan) for tag, column in columns.items()}
        first = int(np.nanmin(ends)) if not np.isnan(ends).all() else 0
        run = run_name(int(device_id), int(model_id))
        path = logdir / run / layout.TENSORBOARD_EVENT_FILE.format(first=first, prof=data.prof_dir.name)
        out = AtomicFile(path, encoding=None)
        try:
            writer = record_writer(out.handle)
            writer.write(event_pb2.Event(wall_time=float(first), file_version=FILE_VERSION).SerializeToString())
            for i, step in enumerate(steps.tolist()):
                summary = summary_pb2.Summary(value=[
                    summary_pb2.Summary.Value(tag=tag, simple_value=float(v[i])) for tag, v in values.items() if not np.isnan(v[i])
                ])
                wall = ends[i] if not np.isnan(ends[i]) else float(first)
                writer.write(event_pb2.Event(wall_time=float(wall), step=step, summary=summary).SerializeToString())
        except BaseException:
            out.abort()
            raise
        written.append(RunWritten(run=run, path=out.commit(), iterations=len(steps)))
    return written


def write_tensorboard(prof_dirs: list[Path], logdir: Path | str) -> list[RunWritten]:
    """Every run of ``prof_dirs`` (a job's PROF folders, one per rank) into ``logdir``.

    Raises ``NothingFoundError`` when none has iteration records, and
    ``BadInputError`` when two folders hold one rank (two jobs: their runs would
    be one run); a folder without records among others is skipped.
    """
    _protos()
    loaded, empty = [], []
    for prof_dir in prof_dirs:
        try:
            loaded.append(load_prof_dir(prof_dir))
        except NothingFoundError as exc:
            empty.append(str(exc))
    if not loaded:
        raise NothingFoundError("; ".join(empty) or "no PROF_* folder")
    owner: dict[int, Path] = {}
    for data in loaded:
        for device_id in sorted(set(data.table.frame[st.DEVICE_ID].astype("int64").tolist())):
            if device_id in owner:
                raise BadInputError(f"rank {device_id} is in both {owner[device_id]} and {data.prof_dir}: two jobs, whose runs "
                                    "would mix in one TensorBoard run; give a folder holding one job")
            owner[device_id] = data.prof_dir
    return [run for data in loaded for run in write_runs(data, logdir)]


def _write(job: ExportJob, out: ReportPaths) -> None:
    """The ``"tensorboard": DIR`` option: the step phases as TensorBoard scalars in that logdir.

    The logdir is the one info.json's options hold (absolute since validation;
    a PROF folder is one process, so its devices share it). Like the msprof
    layout, a failure is a warning: the other reports are written already.
    """
    data = job.data
    logdirs = [] if data is None else [
        logdir for logdir in (d.info.option("tensorboard") for d in data.devices) if isinstance(logdir, str)]
    if data is None or not logdirs:
        return
    try:
        runs = write_runs(data, Path(logdirs[0]))
    except Exception as exc:  # noqa: BLE001 - the scalars never cost the user their reports
        warnings.warn(f"{data.prof_dir}: TensorBoard scalars not written to {logdirs[0]}: {exc}", RuntimeWarning, stacklevel=3)
        return
    out.extend(run.path for run in runs)
    out.notes.append(f"TensorBoard: {len(runs)} run(s) of step phases in {logdirs[0]} ({', '.join(r.run for r in runs)}); "
                     f"open with: tensorboard --logdir {logdirs[0]}")


EXPORTER = Exporter("tensorboard", None, _write)
