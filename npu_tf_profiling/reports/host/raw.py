"""Read a device folder's ``host_sys.csv`` (``raw_format.host_usage`` documents it) as columns.

It is appended in batches while the job runs, so a kill can tear the last line: it is dropped, and the
rest is read as if it were not there. (``mstx.jsonl``'s reader is ``raw_format.mstx_markers``.)
"""
from __future__ import annotations

import io
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

import numpy as np
import pandas as pd

from npu_tf_profiling.raw_format import host_usage, layout


@dataclass
class HostSamples:
    """One device folder's samples, as columns (``t_us`` sorted); a counter absent from a sample is NaN."""

    header: dict[str, Any]
    t_us: np.ndarray
    columns: dict[str, np.ndarray] = field(default_factory=dict)  # "cpu" -> (n, 2), "mem" -> (n,), ...

    def has(self, key: str) -> bool:
        column = self.columns.get(key)
        return column is not None and bool(np.isfinite(column).any())


def read_host_samples(device_dir: Path) -> Optional[HostSamples]:
    """The samples of ``host_sys.csv``, or None when the folder has none."""
    path = Path(device_dir) / layout.DATA_DIR / layout.HOST_SYS_FILE
    if not path.is_file():
        return None
    data = path.read_bytes()
    first = data.find(b"\n")
    head = host_usage.decode_header(data[:first]) if first >= 0 else None
    if head is None:
        return None
    body = data[first + 1:data.rfind(b"\n") + 1]  # a torn last line (a kill mid-append) is dropped
    if not body:
        return None
    frame = pd.read_csv(io.BytesIO(body), header=None, names=list(host_usage.COLUMNS), dtype=float,
                        on_bad_lines="skip", engine="c")
    frame = frame[np.isfinite(frame["t_us"])].sort_values("t_us", kind="stable")
    if frame.empty:
        return None
    columns = {}
    for group, names in host_usage.GROUPS.items():
        values = frame[list(names)].to_numpy(dtype=float)
        columns[group] = values[:, 0] if len(names) == 1 else values
    return HostSamples(head["header"], frame["t_us"].to_numpy(dtype=float), columns)
