"""Read a device folder's ``host_sys.jsonl`` and ``mstx.jsonl`` (``raw_format.layout`` documents both).

Both are appended in batches while the job runs, so a kill can tear the last line: a line that is not
a JSON object is skipped, and so is one without its time, and the rest is read as if it were not there.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Optional

import numpy as np

from npu_tf_profiling.raw_format import layout


def _objects(path: Path) -> Iterator[dict[str, Any]]:
    if not path.is_file():
        return
    with open(path, "rb") as lines:
        for line in lines:
            try:
                value = json.loads(line)
            except ValueError:
                continue
            if isinstance(value, dict):
                yield value


@dataclass
class HostSamples:
    """One device folder's samples, as columns (``t_us`` sorted); a counter absent from a sample is NaN."""

    header: dict[str, Any]
    t_us: np.ndarray
    columns: dict[str, np.ndarray] = field(default_factory=dict)  # "cpu" -> (n, 2), "mem" -> (n,), ...

    def has(self, key: str) -> bool:
        column = self.columns.get(key)
        return column is not None and bool(np.isfinite(column).any())


_WIDTHS = {"cpu": 2, "sys_cpu": 6, "mem": 1, "sys_mem": 2, "disk": 2, "net": 2, "hwm_kb": 1, "dev_peak": 1}


def read_host_samples(device_dir: Path) -> Optional[HostSamples]:
    """The samples of ``host_sys.jsonl``, or None when the folder has none."""
    header: dict[str, Any] = {}
    rows: list[dict[str, Any]] = []
    for value in _objects(Path(device_dir) / layout.DATA_DIR / layout.HOST_SYS_FILE):
        if isinstance(value.get("header"), dict):
            header = value["header"]
        elif isinstance(value.get("t_us"), (int, float)):
            rows.append(value)
    if not rows:
        return None
    rows.sort(key=lambda row: row["t_us"])
    columns: dict[str, np.ndarray] = {}
    for key, width in _WIDTHS.items():
        column = np.full((len(rows), width), np.nan)
        for i, row in enumerate(rows):
            value = row.get(key)
            if isinstance(value, (int, float)) and width == 1:
                column[i, 0] = value
            elif isinstance(value, list) and len(value) == width and all(isinstance(v, (int, float)) for v in value):
                column[i] = value
        columns[key] = column[:, 0] if width == 1 else column
    return HostSamples(header, np.array([row["t_us"] for row in rows], dtype=float), columns)


@dataclass(frozen=True)
class Marker:
    kind: str  # "mark" or "range"
    message: str
    domain: str
    tid: int
    start_us: float
    end_us: float


def read_markers(device_dir: Path) -> list[Marker]:
    """The mstx markers of ``mstx.jsonl``, by start time."""
    markers = []
    for value in _objects(Path(device_dir) / layout.DATA_DIR / layout.MSTX_FILE):
        try:
            markers.append(Marker(str(value["kind"]), str(value["message"]), str(value["domain"]), int(value["tid"]),
                                  float(value["start_us"]), float(value["end_us"])))
        except (KeyError, TypeError, ValueError):
            continue
    return sorted(markers, key=lambda m: m.start_us)
