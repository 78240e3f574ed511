"""``cluster_step_trace_time.csv`` from the ranks' own lines: merged in (model, step, rank) order, sliced when too big.

Each per-rank task formats its rank's lines (``rank_task``); here they are
merged without a Python object per line beyond the chunk being written (each
rank's lines stay one bytes object with their start offsets).

A table over the slice size (``trace_slices.DEFAULT_SLICE_BYTES``, CANN's
200 MiB, which keeps every file under the 256 MB a viewer or spreadsheet
opens) becomes ``cluster_step_trace_time_slice_<n>.csv``, n = 0, 1, ... in
step order: each with the header, each cut between steps (all ranks of a
step in one file), together every row once. At 4,096 ranks x 1,000 steps the
table is about 330 MB.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from npu_tf_profiling.raw_format import own_files
from npu_tf_profiling.raw_format.atomic import AtomicFile
from npu_tf_profiling.reports.cluster import step_table as cst
from npu_tf_profiling.reports.cluster.rank_task import RankPart
from npu_tf_profiling.reports.encoders.trace_slices import DEFAULT_SLICE_BYTES

SLICE_BYTES = DEFAULT_SLICE_BYTES
CHUNK_ROWS = 100_000


def slice_name(n: int) -> str:
    return f"{Path(cst.CSV_NAME).stem}_slice_{n}.csv"


def write_csv(out: Path, parts: list[RankPart], slice_bytes: int | None = None) -> list[Path]:
    """Write the table (one file, or slices) into ``out``; returns the files, and removes a previous run's others."""
    slice_bytes = slice_bytes or SLICE_BYTES
    header = (",".join(cst.COLUMNS) + "\n").encode()
    empty = np.zeros(0, "int64")
    keys = [p.csv_keys for p in parts]
    model = np.concatenate([k[:, 0] for k in keys]) if keys else empty
    step = np.concatenate([k[:, 1] for k in keys]) if keys else empty
    rank = np.concatenate([np.full(len(k), p.rank, "int64") for p, k in zip(parts, keys)]) if keys else empty
    part_of = np.concatenate([np.full(len(k), i) for i, k in enumerate(keys)]) if keys else empty
    order = np.lexsort((rank, step, model))
    starts = [np.concatenate([[0], np.flatnonzero(np.frombuffer(p.csv, dtype=np.uint8) == 10) + 1]) for p in parts]
    views = [memoryview(p.csv) for p in parts]
    line_start = np.concatenate([s[:-1] for s in starts]) if parts else empty  # each line's bytes in its rank's text
    line_end = np.concatenate([s[1:] for s in starts]) if parts else empty
    sizes = line_end - line_start  # in the rows' order
    cuts = _cuts(model[order], step[order], sizes[order], slice_bytes - len(header))
    names = [cst.CSV_NAME] if len(cuts) == 2 else [slice_name(n) for n in range(len(cuts) - 1)]
    paths = [out / name for name in names]
    for path, lo, hi in zip(paths, cuts[:-1], cuts[1:]):
        with AtomicFile(path, encoding=None) as handle:
            handle.handle.write(header)
            for a in range(lo, hi, CHUNK_ROWS):
                sel = order[a:min(hi, a + CHUNK_ROWS)]  # plain ints from here: one slice per line is the whole cost
                handle.handle.write(b"".join([views[i][x:y] for i, x, y in
                                              zip(part_of[sel].tolist(), line_start[sel].tolist(), line_end[sel].tolist())]))
    for stale in [out / cst.CSV_NAME, *sorted(out.glob(slice_name(0).replace("_0.csv", "_*.csv")))]:
        if stale not in paths:
            own_files.remove(stale)
    return paths


def _cuts(model: np.ndarray, step: np.ndarray, sizes: np.ndarray, budget: int) -> list[int]:
    """Row positions where the files start, and the end: between steps, each file's rows within ``budget``
    bytes (a single step larger than that gets a file of its own)."""
    n = len(model)
    if n == 0 or int(sizes.sum()) <= budget:
        return [0, n]
    bounds = np.flatnonzero(np.concatenate([[True], (model[1:] != model[:-1]) | (step[1:] != step[:-1])])).tolist() + [n]
    before = np.concatenate([[0], np.cumsum(sizes)])  # bytes before each row
    cuts = [0]
    for first, end in zip(bounds[:-1], bounds[1:]):
        if before[end] - before[cuts[-1]] > budget and first > cuts[-1]:
            cuts.append(first)
    return cuts + [n]
