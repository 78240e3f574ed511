"""``mstx.jsonl``: the mstx markers of one device folder, written and read here (``layout`` names the file).

One object per marker: ``kind`` ("mark" or "range"), ``message``, ``domain``,
``tid`` (the thread that opened it), ``start_us``, ``end_us`` (equal for a mark).
The runtime appends them in batches about once a second, so a torn last line, or
a line from another version, is skipped.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from npu_tf_profiling.raw_format import layout
from npu_tf_profiling.raw_format.json_lines import json_objects


@dataclass(frozen=True)
class Marker:
    kind: str  # "mark" or "range"
    message: str
    domain: str
    tid: int
    start_us: float
    end_us: float


def encode_marker(kind: str, message: str, domain: str, tid: int, start_us: float, end_us: float) -> bytes:
    return json.dumps({"kind": kind, "message": message, "domain": domain, "tid": tid,
                       "start_us": round(start_us, 3), "end_us": round(end_us, 3)}).encode() + b"\n"


def read_markers(device_dir: Path) -> list[Marker]:
    """The markers of the device folder's ``mstx.jsonl``, by start time (none when it has none)."""
    markers = []
    for value in json_objects(Path(device_dir) / layout.DATA_DIR / layout.MSTX_FILE)[0]:
        try:
            markers.append(Marker(str(value["kind"]), str(value["message"]), str(value["domain"]), int(value["tid"]),
                                  float(value["start_us"]), float(value["end_us"])))
        except (KeyError, TypeError, ValueError):
            continue
    return sorted(markers, key=lambda m: m.start_us)
