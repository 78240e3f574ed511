"""Find PROF_* folders and load one into a step-trace table.

Shared by ``report`` and ``summary`` (and meant for the cluster analysis), so
"what counts as a PROF folder" and "what counts as having no data" are decided
once, and map to the CLI's exit codes through ``errors``.
"""
from __future__ import annotations

import functools
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

import numpy as np

from npu_tf_profiling.raw_format import layout
from npu_tf_profiling.raw_format.prof_name import STAMP_FORMAT, ProfName
from npu_tf_profiling.reports.step import records as raw_mod
from npu_tf_profiling.reports.step import retraces
from npu_tf_profiling.reports.step import table as st
from npu_tf_profiling.reports.task import traced as task_traced
from npu_tf_profiling.config.notices import warn_without_source
from npu_tf_profiling.reports.errors import BadInputError, NothingFoundError, RawDataWarning

_TIMESTAMP = re.compile(r"^\d{14}$")


@dataclass
class ProfData:
    """One PROF_* folder, read: its devices' raw data and the combined step-trace table."""

    prof_dir: Path
    devices: list[raw_mod.DeviceRaw]
    table: st.StepTraceTable

    @property
    def skipped_lines(self) -> int:
        """Lines skipped over all devices (torn or corrupt), so callers can report it."""
        return sum(d.trace.skipped_count for d in self.devices if d.trace is not None)

    @functools.cached_property
    def task_traced(self) -> tuple[np.ndarray, np.ndarray]:
        """Per row of ``table``: (task-traced, disturbed by task_trace), see ``task.traced``.

        Computed on first use (it reads task_trace.bin's record headers), since
        only the statistics need it, not the step-trace files.
        """
        parts = [task_traced.disturbed(d.trace.frame, task_traced.traced_runs(d.device_dir)) for d in _with_rows(self.devices)]
        if not parts:
            return np.zeros(0, dtype=bool), np.zeros(0, dtype=bool)
        return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])

    @functools.cached_property
    def retraced(self) -> np.ndarray:
        """Per row of ``table``: what retraced its step in that iteration, in words ("" nothing; ``step.retraces``)."""
        parts = [retraces.retraced_rows(d.trace.frame, d.device_dir, d.info) for d in _with_rows(self.devices)]
        return np.concatenate(parts) if parts else np.zeros(0, dtype=object)


def rows_of(data: ProfData, mask: np.ndarray) -> ProfData:
    """The same folder with only the table's rows in ``mask`` (the advisor on one slow stretch); the per-row facts
    (task-traced, retraced) are the whole folder's, masked alike, so a row keeps what its neighbours made it."""
    table = st.StepTraceTable(data.table.frame[mask], data.table.n_reduce, data.table.has_previous[mask])
    part = ProfData(data.prof_dir, data.devices, table)
    traced, disturbed = data.task_traced
    part.__dict__.update(task_traced=(traced[mask], disturbed[mask]), retraced=data.retraced[mask])  # the cached properties
    return part


def _with_rows(devices: list[raw_mod.DeviceRaw]) -> list[raw_mod.DeviceRaw]:
    """The devices with iteration records, in folder order: the ones ``ProfData.table`` holds, in its row order."""
    return [d for d in devices if d.trace is not None and not d.trace.frame.empty]


def is_prof_dir(path: Path) -> bool:
    """A PROF folder: named ``PROF_*`` or holding ``device_*`` folders (a renamed copy)."""
    return path.is_dir() and (path.name.startswith(layout.PROF_DIR_PREFIX) or bool(layout.device_dirs(path)))


def find_prof_dirs(path: Path | str) -> list[Path]:
    """The PROF folders a user may mean by ``path``: itself, or the PROF_* folders in it.

    Raises ``BadInputError`` if ``path`` is missing, not a folder, or a device
    folder (a mistake in the path), and ``NothingFoundError`` for a folder that
    holds no PROF folder (yet): ``cluster`` answers an empty folder the same way.
    """
    path = Path(path)
    if not path.exists():
        raise BadInputError(f"{path}: no such folder")
    if not path.is_dir():
        raise BadInputError(f"{path}: not a folder")
    if is_prof_dir(path):
        return [path]
    found = sorted(p for p in path.iterdir() if p.is_dir() and p.name.startswith(layout.PROF_DIR_PREFIX))
    if not found and path.name.startswith(layout.DEVICE_DIR_PREFIX):
        raise BadInputError(f"{path}: a device folder; give its parent PROF_* folder ({path.parent})")
    if not found:
        raise NothingFoundError(
            f"{path}: not a {layout.PROF_DIR_PREFIX}* folder, and holds none "
            f"(expected {layout.PROF_DIR_PREFIX}<pid>_<time>_<id>/{layout.DEVICE_DIR_PREFIX}<id>/...)"
        )
    return found


def report_timestamp(prof_dir: Path | str, now: Optional[float] = None) -> str:
    """The ``<ts>`` of report names: the PROF folder's own time, else the current local time.

    Reusing the folder's time makes regenerating a report overwrite it instead
    of adding a second file per run.
    """
    name = ProfName.of(prof_dir)
    return name.stamp if name is not None else time.strftime(STAMP_FORMAT, time.localtime(now))


def check_timestamp(value: str) -> str:
    """Validate a user-given ``YYYYmmddHHMMSS`` timestamp; raises ``BadInputError``."""
    if not _TIMESTAMP.match(value):
        raise BadInputError(f"timestamp {value!r} is not YYYYmmddHHMMSS")
    try:
        time.strptime(value, STAMP_FORMAT)
    except ValueError as exc:
        raise BadInputError(f"timestamp {value!r} is not a valid date/time: {exc}") from None
    return value


def load_prof_dir(prof_dir: Path | str) -> ProfData:
    """Read every device of a PROF folder and compute one step-trace table for all.

    All devices share one table (and so one CSV), with the Reduce pairs padded
    to the widest device, as msprof does with its Device_id column. Raises
    ``BadInputError`` for an unreadable folder/file and ``NothingFoundError``
    when no device has any iteration record.
    """
    prof_dir = Path(prof_dir)
    if not prof_dir.is_dir():
        raise BadInputError(f"{prof_dir}: no such folder")
    device_dirs = layout.device_dirs(prof_dir)
    if not device_dirs:
        raise NothingFoundError(f"{prof_dir}: no {layout.DEVICE_DIR_PREFIX}* folders (the run recorded nothing)")
    devices: list[raw_mod.DeviceRaw] = []
    for device_dir in device_dirs:
        try:
            device = raw_mod.read_device(device_dir)
        except OSError as exc:
            raise BadInputError(f"{device_dir}: cannot read raw data: {exc}") from exc
        if device.trace is None:
            # Shown with no source line: the reports' own line (at the job's exit, or the CLI's) would say nothing.
            warn_without_source(
                f"{device_dir}: no step-trace rows ({layout.DATA_DIR}/{layout.TRAINING_FRAMES_FILE} or "
                f"{layout.TRAINING_TRACE_FILE}): training_trace was off, or no traced iteration wrote a row "
                f"(the notes in {layout.INFO_FILE} say why)",
                RawDataWarning,
            )
        devices.append(device)
    with_rows = _with_rows(devices)
    if not with_rows:
        raise NothingFoundError(f"{prof_dir}: no iteration records in any device folder")
    ids = [d.device_id for d in with_rows]
    if len(set(ids)) != len(ids):
        raise BadInputError(f"{prof_dir}: several device folders claim the same device id ({sorted(ids)})")
    n_reduce = max(st.max_reduce_groups(d.trace.frame) for d in with_rows)
    tables = [st.compute_step_trace(d.trace.frame, d.device_id, n_reduce) for d in with_rows]
    return ProfData(prof_dir=prof_dir, devices=devices, table=st.concat_tables(tables))
