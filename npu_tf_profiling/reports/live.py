"""Following a running job's raw files: each device folder's new step-trace frames, read as they are appended.

`watch` (and anything else that reports while the job runs) asks every second
how far each device has got. Re-reading a long job's whole training_trace.bin
each time would cost more the longer it runs, so each `DeviceFollower` keeps
its byte offset and reads only what was appended since, keeping a torn last
frame (being written) for the next read. It keeps the iteration count per model
and the last RECENT_ROWS rows' phases, which is all a live line needs.

Whether a folder's job still runs is read from info.json: ``closed_us`` once the
job closed it; its writer's ``pid`` on this host tells a running job from a
killed one (a folder never closed whose writer is gone).
"""
from __future__ import annotations

import json
import os
import socket
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import numpy as np

from npu_tf_profiling.raw_format import layout
from npu_tf_profiling.raw_format.training_frame import HEADER_SIZE, Frame, decode_frames
from npu_tf_profiling.raw_format.run_info import RunInfo

RECENT_ROWS = 200
RUNNING, CLOSED, KILLED = "running", "closed", "killed"


@dataclass
class DeviceFollower:
    """One device folder of a running job (see the module docstring)."""

    device_dir: Path
    offset: int = 0
    pending: bytes = b""
    iterations: dict[int, int] = field(default_factory=dict)  # model id -> rows read
    last_end: dict[int, float] = field(default_factory=dict)  # model id -> last Iteration End (µs)
    # (iteration time, data aug bound, FP to BP, refresh), µs; NaN where the row lacks the point
    recent: deque = field(default_factory=lambda: deque(maxlen=RECENT_ROWS))

    def read_new(self) -> int:
        """Read what was appended since the last call; returns the number of new rows."""
        path = self.device_dir / layout.DATA_DIR / layout.TRAINING_FRAMES_FILE
        try:
            with path.open("rb") as handle:
                handle.seek(self.offset)
                data = self.pending + handle.read()
        except FileNotFoundError:
            return 0
        self.offset += len(data) - len(self.pending)
        used, count = 0, 0
        for item in decode_frames(data):
            if isinstance(item, Frame):
                used = item.offset + HEADER_SIZE + len(item.rows) * item.shape.dtype.itemsize
                count += len(item.rows)
                self._add(item)
        self.pending = data[used:]
        return count

    def _add(self, frame: Frame) -> None:
        shape, times = frame.shape, frame.rows["times"]
        fp_at = 2 * shape.get_next_pairs
        fp = times[:, fp_at] if shape.has_fp else np.full(len(times), np.nan)
        bp = times[:, fp_at + shape.has_fp] if shape.has_bp else np.full(len(times), np.nan)
        ends = times[:, -1]
        previous = np.concatenate([[self.last_end.get(frame.model_id, np.nan)], ends[:-1]])
        self.last_end[frame.model_id] = float(ends[-1])
        self.iterations[frame.model_id] = self.iterations.get(frame.model_id, 0) + len(times)
        self.recent.extend(zip(ends - previous, fp - previous, bp - fp, ends - bp))

    def phases(self) -> dict[str, Optional[float]]:
        """The recent rows' median Iteration Time (µs) and each phase's share of their summed time."""
        if not self.recent:
            return {"median_us": None, "data_aug": None, "fp_to_bp": None, "refresh": None}
        rows = np.array(self.recent, dtype=np.float64)
        whole = rows[:, 0]
        known = ~np.isnan(whole)
        total = float(np.sum(whole[known])) or float("nan")

        def share(column: int) -> Optional[float]:
            values = rows[known, column]
            return None if np.isnan(values).all() or total != total else round(float(np.nansum(values)) / total, 4)

        median = float(np.median(whole[known])) if known.any() else None
        return {"median_us": median, "data_aug": share(1), "fp_to_bp": share(2), "refresh": share(3)}


def read_info(device_dir: Path) -> Optional[RunInfo]:
    """The device's info.json; None while it is missing or being replaced (silently: a running job rewrites it)."""
    try:
        info = json.loads((device_dir / layout.INFO_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return RunInfo.from_json(info) if isinstance(info, dict) else None


def job_state(run: RunInfo) -> str:
    """CLOSED, KILLED (never closed, and its writer, on this host, is gone) or RUNNING (also: another host's)."""
    if run.closed_us is not None:
        return CLOSED
    pid = run.pid
    if pid is None or run.host != socket.gethostname():
        return RUNNING
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return KILLED
    except PermissionError:  # another user's live process
        return RUNNING
    return RUNNING
