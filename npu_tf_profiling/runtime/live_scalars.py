"""The ``tensorboard`` option while the job runs: each drained batch of rows appended as TensorBoard scalars.

The reports write the step phases into the logdir when they are built (each
session close, at exit). A long job's curves should not wait for that, so the
ring reader thread, which has just recorded a batch of rows, appends their
phases to the same event file (``layout.TENSORBOARD_EVENT_FILE``): TensorBoard
shows them at most one drain (0.5 s) and its own reload behind. The reports
replace that file whole when they are built, with the step table's exact values
(the live ones are computed from the same stamps, here without the table), and
the live rows that follow are appended to theirs.

Tags as the reports write them (`reports.tensorboard_events.TAGS`, checked by
tests/test_anomaly_capture.py). A failure is one warning, and live writing stops.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import numpy as np

from npu_tf_profiling.raw_format import layout, own_files
from npu_tf_profiling.raw_format.training_frame import RecordShape

ITERATION_TIME, FP_TO_BP, REFRESH, DATA_AUG, GETNEXT, REDUCE = (
    f"{layout.TENSORBOARD_TAG_PREFIX}{name}" for name in (
        "Iteration Time(us)", "FP to BP Time(us)", "Iteration Refresh(us)", "Data Aug Bound(us)", "GetNext Time(us)",
        "Reduce Duration(us)"))
LIVE_TAGS = (ITERATION_TIME, FP_TO_BP, REFRESH, DATA_AUG, GETNEXT, REDUCE)


class LiveScalars:
    """One PROF folder's live event files, one per model (see the module docstring)."""

    def __init__(self, logdir: Path, rank: int, prof_name: str) -> None:
        self.logdir, self.rank, self.prof_name = logdir, rank, prof_name
        self._files: dict[int, tuple[Any, Any, Path]] = {}  # model id -> (file, RecordWriter, path)
        self._last_end: dict[int, float] = {}

    def append(self, model_id: int, shape: RecordShape, ids: np.ndarray, times_us: np.ndarray) -> None:
        from tensorboard.compat.proto import event_pb2, summary_pb2

        values = self._phases(model_id, shape, times_us)
        ends_s = times_us[:, -1] / 1e6
        writer = self._writer(model_id, ends_s)
        for i, step in enumerate(ids.tolist()):
            summary = summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag=tag, simple_value=float(round(v[i])))
                                                 for tag, v in values.items() if not np.isnan(v[i])])
            wall = float(ends_s[i]) if not np.isnan(ends_s[i]) else 0.0
            writer.write(event_pb2.Event(wall_time=wall, step=int(step), summary=summary).SerializeToString())
        writer.flush()

    def close(self) -> None:
        for handle, _, _ in self._files.values():
            handle.close()
        self._files.clear()

    def _phases(self, model_id: int, shape: RecordShape, times: np.ndarray) -> dict[str, np.ndarray]:
        nan = np.full(len(times), np.nan)
        pairs = 2 * shape.get_next_pairs
        fp = times[:, pairs] if shape.has_fp else nan
        bp = times[:, pairs + shape.has_fp] if shape.has_bp else nan
        ends = times[:, -1]
        previous = np.concatenate([[self._last_end.get(model_id, np.nan)], ends[:-1]])
        self._last_end[model_id] = float(ends[-1])
        iteration = np.where(np.isnan(previous), ends - fp, ends - previous)
        values = {ITERATION_TIME: iteration, FP_TO_BP: bp - fp, REFRESH: ends - bp, DATA_AUG: fp - previous}
        if shape.get_next_pairs:
            with np.errstate(all="ignore"):
                values[GETNEXT] = np.nanmax(times[:, 1:pairs:2], axis=1) - np.nanmin(times[:, 0:pairs:2], axis=1)
        if shape.reduce_pairs:
            first = pairs + shape.has_fp + shape.has_bp
            spans = times[:, first + 1:first + 2 * shape.reduce_pairs:2] - times[:, first:first + 2 * shape.reduce_pairs:2]
            values[REDUCE] = np.where(np.isnan(spans).all(axis=1), np.nan, np.nansum(spans, axis=1))
        return values

    def _writer(self, model_id: int, ends_s: np.ndarray) -> Any:
        from tensorboard.compat.proto import event_pb2
        from tensorboard.summary.writer.record_writer import RecordWriter

        entry = self._files.get(model_id)
        if entry is not None and not _same_file(entry[0]):  # the reports replaced it: append to theirs
            entry[0].close()
            handle = os.fdopen(own_files.open_append(entry[2]), "ab")
            entry = self._files[model_id] = (handle, RecordWriter(handle), entry[2])
        if entry is None:
            first = int(np.nanmin(ends_s)) if not np.isnan(ends_s).all() else 0
            folder = own_files.make_dir(self.logdir / layout.TENSORBOARD_RUN.format(rank=self.rank, model_id=model_id))
            path = folder / layout.TENSORBOARD_EVENT_FILE.format(first=first, prof=self.prof_name)
            handle = os.fdopen(own_files.open_append(path), "ab")
            writer = RecordWriter(handle)
            writer.write(event_pb2.Event(wall_time=float(first), file_version=layout.TENSORBOARD_FILE_VERSION).SerializeToString())
            entry = self._files[model_id] = (handle, writer, path)
        return entry[1]


def _same_file(handle: Any) -> bool:
    try:
        return os.stat(handle.name).st_ino == os.fstat(handle.fileno()).st_ino
    except OSError:
        return False
