"""Write ``mindstudio_profiler_output/step_trace_<ts>.csv`` and ``.json`` for a PROF folder.

One CSV and one JSON per PROF folder, holding every device of it (rows carry
``Device_id``; the timeline has one process per device). Files are written to
a temporary name in the same folder and moved into place with ``os.replace``,
so a reader (or a crash mid-write) never sees half a report, and rewriting a
report (same ``<ts>``) replaces it in one step.
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Optional

from npu_tf_profiling import layout
from npu_tf_profiling.reports import chrome_trace
from npu_tf_profiling.reports.prof_dir import ProfData, check_timestamp, load_prof_dir, report_timestamp
from npu_tf_profiling.reports.step_trace_timeline import step_trace_events

STEP_TRACE_STEM = "step_trace"


def atomic_write_text(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` via a temp file + fsync + ``os.replace`` (all or nothing)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def step_trace_paths(prof_dir: Path | str, timestamp: str) -> tuple[Path, Path]:
    """Where the CSV and JSON of ``prof_dir`` go for ``timestamp``."""
    out = layout.report_dir(Path(prof_dir))
    return out / f"{STEP_TRACE_STEM}_{timestamp}.csv", out / f"{STEP_TRACE_STEM}_{timestamp}.json"


def write_step_trace_files(data: ProfData, timestamp: Optional[str] = None) -> list[Path]:
    """Write the reports of already-loaded data; returns [csv, json]."""
    ts = check_timestamp(timestamp) if timestamp is not None else report_timestamp(data.prof_dir)
    csv_path, json_path = step_trace_paths(data.prof_dir, ts)
    atomic_write_text(csv_path, data.table.to_csv())
    atomic_write_text(json_path, chrome_trace.dumps_events(step_trace_events(data.table)))
    return [csv_path, json_path]


def write_step_trace_reports(prof_dir: Path | str, timestamp: Optional[str] = None) -> list[Path]:
    """(Re)build ``step_trace_<ts>.csv`` and ``.json`` of one PROF folder from its raw data.

    ``timestamp`` (``YYYYmmddHHMMSS``) defaults to the one in the PROF folder's
    name, so calling this again overwrites the same two files. Raises
    ``BadInputError`` / ``NothingFoundError`` (see ``prof_dir.load_prof_dir``);
    torn or corrupt raw lines are skipped with a ``RawDataWarning``.
    """
    return write_step_trace_files(load_prof_dir(prof_dir), timestamp)
