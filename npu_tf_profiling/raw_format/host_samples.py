"""host_stacks.jsonl and gc_pauses.jsonl: what the host's Python did, sampled and timed (``with_stack``, ``gc_detect_threshold``).

The step trace says how long the host held the job between iterations, not what
it did. A stack sampler (``runtime.host.stacks``) therefore writes, in
``host_stacks.jsonl``, each distinct stack once, then the samples as (time, stack id)
batches, so a 100 Hz sampler writes a few KB a second however deep TensorFlow's stacks are:

    {"stack": 3, "frames": [[file, line, function], ...], "user": 5 | null}
        frames outermost first; "user" is the index of the innermost frame of the
        script's own code (not the standard library, site-packages or this package)
    {"t_us": [float, ...], "stack": [int, ...]}      samples, epoch µs

``gc_pauses.jsonl`` holds one line per Python garbage collection at or above the threshold:

    {"start_us": float, "duration_us": float, "generation": int, "collected": int, "uncollectable": int}

Lines are appended in batches with one os.write each; a torn last line is skipped and counted.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

import numpy as np

from npu_tf_profiling.raw_format.json_lines import json_objects

K_STACK, K_FRAMES, K_USER, K_TIMES = "stack", "frames", "user", "t_us"
GC_FIELDS = ("start_us", "duration_us", "generation", "collected", "uncollectable")

Frame = tuple[str, int, str]  # file, line, function


def encode_stack(stack_id: int, frames: list[Frame], user: Optional[int]) -> bytes:
    return (json.dumps({K_STACK: stack_id, K_FRAMES: frames, K_USER: user}) + "\n").encode()


def encode_samples(times_us: list[float], stack_ids: list[int]) -> bytes:
    return (json.dumps({K_TIMES: [round(t, 1) for t in times_us], K_STACK: stack_ids}) + "\n").encode()


def encode_gc_pause(start_us: float, duration_us: float, generation: int, collected: int, uncollectable: int) -> bytes:
    values = (round(start_us, 1), round(duration_us, 1), generation, collected, uncollectable)
    return (json.dumps(dict(zip(GC_FIELDS, values))) + "\n").encode()


@dataclass
class HostStacks:
    """One device folder's samples (sorted by time) and the stacks they name."""

    times_us: np.ndarray = field(default_factory=lambda: np.zeros(0))
    stack_ids: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    frames: dict[int, list[Frame]] = field(default_factory=dict)
    user: dict[int, Optional[int]] = field(default_factory=dict)
    skipped: int = 0


def read_host_stacks(path: Path) -> HostStacks:
    """The stacks in `path` (none when it does not exist); unreadable lines, and samples naming no stack, are skipped."""
    records, skipped = json_objects(path)
    out = HostStacks(skipped=skipped)
    times: list[float] = []
    ids: list[int] = []
    for record in records:
        try:
            if K_FRAMES in record:
                stack_id = int(record[K_STACK])
                out.frames[stack_id] = [(str(f), int(n), str(fn)) for f, n, fn in record[K_FRAMES]]
                user = record.get(K_USER)
                out.user[stack_id] = int(user) if user is not None else None
            else:
                batch_t, batch_s = [float(t) for t in record[K_TIMES]], [int(s) for s in record[K_STACK]]
                if len(batch_t) != len(batch_s):
                    raise ValueError("unequal batch")
                times.extend(batch_t)
                ids.extend(batch_s)
        except (ValueError, KeyError, TypeError):
            out.skipped += 1
    known = np.array([s in out.frames for s in ids], dtype=bool)
    t, s = np.asarray(times, dtype=np.float64)[known], np.asarray(ids, dtype=np.int64)[known]
    order = np.argsort(t, kind="stable")
    out.times_us, out.stack_ids = t[order], s[order]
    return out


@dataclass
class GcPauses:
    """One device folder's GC pauses, sorted by start; µs."""

    starts: np.ndarray = field(default_factory=lambda: np.zeros(0))
    durations: np.ndarray = field(default_factory=lambda: np.zeros(0))
    generations: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    collected: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    uncollectable: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    skipped: int = 0


def read_gc_pauses(path: Path) -> GcPauses:
    records, skipped = json_objects(path)
    rows: list[tuple[Any, ...]] = []
    for record in records:
        try:
            row = (float(record["start_us"]), float(record["duration_us"]), int(record["generation"]),
                   int(record["collected"]), int(record["uncollectable"]))
        except (ValueError, KeyError, TypeError):
            skipped += 1
            continue
        if not (math.isfinite(row[0]) and math.isfinite(row[1])) or row[1] < 0:
            skipped += 1
            continue
        rows.append(row)
    rows.sort(key=lambda r: r[0])
    columns = list(zip(*rows)) if rows else [()] * 5
    return GcPauses(np.asarray(columns[0], dtype=np.float64), np.asarray(columns[1], dtype=np.float64),
                    np.asarray(columns[2], dtype=np.int64), np.asarray(columns[3], dtype=np.int64),
                    np.asarray(columns[4], dtype=np.int64), skipped)
