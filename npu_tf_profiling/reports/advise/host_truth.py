"""The one reader of the host-truth files: with_stack's stack samples, GC pauses, host_sys CPU usage.

Other parts of the package write these (the ``with_stack``, ``gc_detect_threshold``
and ``host_sys`` options); `advise` only needs a few facts from them, and must
work on a folder that has none (the options were off, or an earlier version
wrote it). So their names and the fields read live here and nowhere else in
`advise`, each read tolerantly: a missing file is "not recorded", an unreadable
line is skipped. What is not recorded is said, never guessed.
"""
from __future__ import annotations

import csv
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterator, Optional

import numpy as np

STACKS_FILE = "host_stacks.jsonl"
GC_FILE = "gc_pauses.jsonl"
CPU_USAGE_GLOB = "*cpu_usage*.csv"
_TIME_KEYS = ("t_us", "time_us", "ts_us", "timestamp_us", "start_us")
_LIBRARY_MARKERS = (f"{os.sep}site-packages{os.sep}", f"{os.sep}dist-packages{os.sep}", f"{os.sep}npu_tf_profiling{os.sep}",
                    f"{os.sep}lib{os.sep}python3")
_TEXT_FRAME = re.compile(r"^(.+?):(\d+)")
EAGER_MARKER = f"tensorflow{os.sep}python{os.sep}eager{os.sep}execute.py"


@dataclass
class HostTruth:
    """What the host-truth files of one device folder say (None / empty: not recorded)."""

    # with_stack: sample times (µs), each sample's innermost user line ("file:line") and whether it ran an eager op
    stack_times: Optional[np.ndarray] = None
    stack_lines: list[str] = field(default_factory=list)
    stack_eager: Optional[np.ndarray] = None
    # gc: pause spans (µs)
    gc_starts: Optional[np.ndarray] = None
    gc_ends: Optional[np.ndarray] = None
    # host_sys: mean host CPU usage in percent over the samples
    cpu_usage_pct: Optional[float] = None


def _files(device_dir: Path, name: str) -> list[Path]:
    """`name` (a file name or glob) in the device folder, its data folder or the PROF folder."""
    found: list[Path] = []
    for folder in (device_dir / "data", device_dir, device_dir.parent):
        found.extend(sorted(p for p in folder.glob(name) if p.is_file()))
    return found


def _lines(path: Path) -> Iterator[dict[str, Any]]:
    try:
        raw = path.read_bytes().splitlines()
    except OSError:
        return
    for line in raw:
        try:
            record = json.loads(line)
        except ValueError:
            continue
        if isinstance(record, dict):
            yield record


def _time(record: dict[str, Any]) -> Optional[float]:
    for key in _TIME_KEYS:
        value = record.get(key)
        if isinstance(value, (int, float)):
            return float(value)
    return None


def _frame(item: Any) -> Optional[tuple[str, int]]:
    if isinstance(item, dict):
        file, line = item.get("file") or item.get("filename"), item.get("line") or item.get("lineno")
    elif isinstance(item, (list, tuple)) and len(item) >= 2:
        file, line = item[0], item[1]
    elif isinstance(item, str) and _TEXT_FRAME.match(item):  # "file:line" or "file:line(function)"
        file, line = _TEXT_FRAME.match(item).groups()
    else:
        return None
    try:
        return str(file), int(line)
    except (TypeError, ValueError):
        return None


def _sample(record: dict[str, Any]) -> Optional[tuple[str, bool]]:
    """(innermost user line, ran an eager op) of one stack sample; frames are outermost first unless said otherwise."""
    frames = record.get("frames") or record.get("stack")
    if isinstance(frames, str):
        frames = frames.split(";")  # a collapsed stack, outermost first
    if not isinstance(frames, list):
        return None
    parsed = [f for f in (_frame(item) for item in frames) if f is not None]
    if record.get("order") == "innermost_first":
        parsed.reverse()
    user = [f for f in parsed if not any(m in os.path.abspath(f[0]) for m in _LIBRARY_MARKERS) and not f[0].startswith("<")]
    if not user:
        return None
    eager = any(f[0].endswith(EAGER_MARKER) for f in parsed)
    return f"{user[-1][0]}:{user[-1][1]}", eager


def read_host_truth(device_dir: Path) -> HostTruth:
    truth = HostTruth()
    times, lines, eager = [], [], []
    for path in _files(device_dir, STACKS_FILE):
        for record in _lines(path):
            t, sample = _time(record), _sample(record)
            if t is not None and sample is not None:
                times.append(t)
                lines.append(sample[0])
                eager.append(sample[1])
    if times:
        truth.stack_times, truth.stack_lines, truth.stack_eager = np.asarray(times), lines, np.asarray(eager, bool)
    starts, ends = [], []
    for path in _files(device_dir, GC_FILE):
        for record in _lines(path):
            start = _time(record)
            end = record.get("end_us")
            if end is None and isinstance(record.get("duration_us"), (int, float)):
                end = (start or 0.0) + record["duration_us"]
            if end is None and isinstance(record.get("duration_ms"), (int, float)):
                end = (start or 0.0) + 1000.0 * record["duration_ms"]
            if start is not None and isinstance(end, (int, float)) and end >= start:
                starts.append(start)
                ends.append(float(end))
    if starts:
        truth.gc_starts, truth.gc_ends = np.asarray(starts), np.asarray(ends)
    truth.cpu_usage_pct = _cpu_usage(_files(device_dir, CPU_USAGE_GLOB))
    return truth


def _cpu_usage(paths: list[Path]) -> Optional[float]:
    values: list[float] = []
    for path in paths:
        try:
            with path.open(newline="") as handle:
                for row in csv.DictReader(handle):
                    column = next((k for k in row if k and "usage" in k.lower()), None)
                    try:
                        values.append(float(str(row[column]).rstrip("%")))
                    except (TypeError, ValueError, KeyError):
                        continue
        except (OSError, csv.Error):
            continue
    return float(np.mean(values)) if values else None
