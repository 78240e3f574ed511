"""Data Aug Bound split by cause: the wait for input, the other runs the script made, and the rest (host Python).

Data Aug Bound is the time from one iteration's end to the next one's FP Start
(CANN's column, unchanged). The runtime writes every session run and
tf.function call that was not a training step to ``other_runs.jsonl``
(``raw_format.other_runs``); a run's time counts for an iteration where its span
overlaps that iteration's Data Aug Bound window. So each gap is split into:

* **input**: GetNext Time, plus the runs that fetch an input pipeline's batch to
  feed it (kind "input reads"); N/A when neither was measured (plain feed_dict);
* **other runs**: the union of the overlapping runs' spans, with their count and
  time per kind (evaluation, summaries, checkpoint, validation, ...);
* **host**: the rest (the script's Python between the runs; for a feed_dict
  script, that is where its batch is made).

The shares are means (Σ part / Σ Iteration Time), and one long gap can carry
a mean: a 52.7 ms validation among 58 short gaps made "other runs" 39% of a
loop where no other gap held any. So the split also says which cause is the
largest in most gaps (``typical``: what the median gap is), and lists apart the
gaps longer than LONG_GAP_FACTOR times the median one (``long_gaps``: iteration,
duration, what they held); a "mostly X" sentence must hold for both.

A folder whose info.json lacks ``other_runs_recorded`` is from an earlier
version: nothing is split (``load_other_runs`` gives None).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

import numpy as np
import pandas as pd

from npu_tf_profiling.raw_format import layout
from npu_tf_profiling.raw_format.other_runs import INPUT_READS, RETRACE, OtherRuns, read_other_runs
from npu_tf_profiling.raw_format.run_info import RunInfo
from npu_tf_profiling.reports.step import table as st

INPUT = "input"
OTHER = "other runs"
HOST = "host"
# A gap this many times the median Data Aug Bound is listed apart: a validation pass, a checkpoint, a retrace
# (a steady loop's gaps vary by well under 2x; the validation gap was 30x the median).
LONG_GAP_FACTOR = 5.0
MAX_LONG_GAPS = 5  # listed by duration; the rest are counted


def load_other_runs(device_dir: Path, info: RunInfo) -> Optional[OtherRuns]:
    """The device folder's other runs; None when its runtime did not record them.

    A retrace's line is the step's own call, not a run between iterations: its iteration is named and left out
    of the statistics apart (``retraces``), so it is not split here."""
    if not info.other_runs_recorded:
        return None
    return without_retraces(read_other_runs(Path(device_dir) / layout.DATA_DIR / layout.OTHER_RUNS_FILE))


def without_retraces(runs: OtherRuns) -> OtherRuns:
    """The runs between iterations: a retrace's record is the step's own call (``load_other_runs``)."""
    keep = np.array([kind != RETRACE for kind in runs.kinds], dtype=bool)
    return OtherRuns(runs.starts[keep], runs.ends[keep], [k for k in runs.kinds if k != RETRACE], runs.skipped, runs.retraces)


def _f(series: pd.Series) -> np.ndarray:
    return series.astype("float64").to_numpy(dtype="float64", na_value=np.nan)


def _union(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Disjoint sorted intervals covering the given ones, and each one's covered length before it."""
    if not len(starts):
        return np.zeros(0), np.zeros(0), np.zeros(1)
    order = np.argsort(starts, kind="stable")
    starts, ends = starts[order], np.maximum.accumulate(ends[order])
    new = np.ones(len(starts), dtype=bool)
    new[1:] = starts[1:] > ends[:-1]
    groups = np.cumsum(new) - 1
    merged_starts = starts[new]
    merged_ends = np.zeros(len(merged_starts))
    np.maximum.at(merged_ends, groups, ends)
    before = np.concatenate([[0.0], np.cumsum(merged_ends - merged_starts)])
    return merged_starts, merged_ends, before


def _covered(points: np.ndarray, union: tuple[np.ndarray, np.ndarray, np.ndarray]) -> np.ndarray:
    """For each point t, the length of the union that lies before t."""
    starts, ends, before = union
    if not len(starts):
        return np.zeros(len(points))
    k = np.searchsorted(starts, points, side="right") - 1
    inside = np.clip(np.minimum(points, ends[np.maximum(k, 0)]) - starts[np.maximum(k, 0)], 0, None)
    return np.where(k >= 0, before[np.maximum(k, 0)] + inside, 0.0)


@dataclass
class RowSplit:
    """Per row (of a model's annotated rows), µs: the window's other runs in all, and per kind (time, count)."""

    other_us: np.ndarray
    by_kind: dict[str, tuple[np.ndarray, np.ndarray]]


def split_rows(rows: pd.DataFrame, runs: OtherRuns) -> RowSplit:
    """Each row's Data Aug Bound window [previous end, FP Start] against the runs' spans (NaN: no window)."""
    fp = _f(rows[st.FP_START])
    window_end = fp
    window_start = fp - _f(rows[st.DATA_AUG_BOUND])
    known = np.isfinite(window_start) & np.isfinite(window_end)
    a, b = np.where(known, window_start, 0.0), np.where(known, window_end, 0.0)
    everything = _union(runs.starts, runs.ends)
    other = np.where(known, _covered(b, everything) - _covered(a, everything), np.nan)
    kinds = np.asarray(runs.kinds, dtype=object)
    by_kind = {}
    for kind in dict.fromkeys(runs.kinds):
        mine = kinds == kind
        starts, ends = runs.starts[mine], runs.ends[mine]
        union = _union(starts, ends)
        time = _covered(b, union) - _covered(a, union)
        sorted_ends = np.sort(ends)
        count = np.searchsorted(starts, b, side="left") - np.searchsorted(sorted_ends, a, side="right")
        by_kind[kind] = (np.where(known, time, np.nan), np.where(known, count, 0))
    return RowSplit(other, by_kind)


def _sum(values: np.ndarray, mask: np.ndarray) -> float:
    return float(np.nansum(np.where(mask, values, np.nan)))


@dataclass
class GapParts:
    """Per row, µs: Iteration Time, Data Aug Bound and its parts (input, other runs, host); ``mask``: rows with a gap."""

    split: RowSplit
    iteration_us: np.ndarray
    gap_us: np.ndarray
    input_us: np.ndarray
    other_us: np.ndarray
    host_us: np.ndarray
    mask: np.ndarray
    has_input: bool

    def past_first_runs(self) -> np.ndarray:
        """The rows with a gap, less those holding a kind's first run: that one also holds the kind's one-time
        set-up (its graph pruned, its function traced: 70 ms against 0.2 ms a run after it, measured), which
        running it less often does not save. A kind run once is left out whole."""
        keep = self.mask.copy()
        for _, count in self.split.by_kind.values():
            held = np.flatnonzero(self.mask & (count > 0))
            if len(held):
                keep[held[0]] = False
        return keep


def gap_parts(rows: pd.DataFrame, runs: OtherRuns) -> GapParts:
    """Each row's gap between steps split into input, other runs and host (module docstring)."""
    split = split_rows(rows, runs)
    it_time, dab, getnext = _f(rows[st.ITERATION_TIME]), _f(rows[st.DATA_AUG_BOUND]), _f(rows[st.GETNEXT_TIME])
    mask = np.isfinite(dab) & np.isfinite(it_time)
    reads_time, reads_count = split.by_kind.get(INPUT_READS, (np.zeros(len(rows)), np.zeros(len(rows))))
    has_input = bool(np.isfinite(getnext[mask]).any()) or bool(np.where(mask, reads_count, 0).sum())
    input_us = np.clip(np.where(np.isfinite(getnext), getnext, 0.0) + np.nan_to_num(reads_time), 0, dab)
    other_us = np.clip(np.nan_to_num(split.other_us) - np.nan_to_num(reads_time), 0, dab - input_us)
    host_us = np.clip(dab - input_us - other_us, 0, None)
    return GapParts(split, it_time, dab, input_us, other_us, host_us, mask, has_input)


def kind_totals(parts: GapParts, mask: np.ndarray) -> dict[str, dict[str, Any]]:
    """Per kind of other run, over the rows in ``mask``: how many runs, and their time (µs)."""
    return {kind: {"count": int(np.where(mask, count, 0).sum()), "time_us": round(_sum(time, mask), 1)}
            for kind, (time, count) in parts.split.by_kind.items()}


def summarize_split(rows: pd.DataFrame, runs: OtherRuns) -> Optional[dict[str, Any]]:
    """The split over `rows` (the statistics' basis): shares of Σ Iteration Time, and each kind's count and time.

    None when no row has a Data Aug Bound window.
    """
    gp = gap_parts(rows, runs)
    split, dab, mask, has_input = gp.split, gp.gap_us, gp.mask, gp.has_input
    input_us, other_us, host_us = gp.input_us, gp.other_us, gp.host_us
    total = _sum(gp.iteration_us, mask)
    if not mask.any() or total <= 0:
        return None
    kinds = kind_totals(gp, mask)
    parts = np.column_stack([input_us if has_input else np.zeros(len(rows)), other_us, host_us])[mask]
    median_gap = float(np.median(dab[mask]))
    return {
        "data_aug_bound_share": _sum(dab, mask) / total,
        "input_share": _sum(input_us, mask) / total if has_input else None,
        "other_share": _sum(other_us, mask) / total,
        "host_share": _sum(host_us, mask) / total,
        "other_runs": {kind: value for kind, value in kinds.items() if value["count"]},
        "median_gap_us": round(median_gap, 1),
        "typical": _typical(parts),
        "long_gaps": _long_gaps(rows, split, dab, input_us if has_input else None, mask, median_gap),
    }


def _typical(parts: np.ndarray) -> Optional[str]:
    """The cause that is the largest part of the most gaps (``parts``: per gap, input, other runs, host):
    what the median gap is mostly; None when no gap has any time."""
    parts = parts[parts.sum(axis=1) > 0]
    if not len(parts):
        return None
    largest = np.argmax(parts, axis=1)
    return (INPUT, OTHER, HOST)[int(np.argmax(np.bincount(largest, minlength=3)))]


def _long_gaps(rows: pd.DataFrame, split: RowSplit, dab: np.ndarray, input_us: Optional[np.ndarray], mask: np.ndarray,
               median_gap: float) -> dict[str, Any]:
    """The gaps over LONG_GAP_FACTOR times the median, longest first: iteration, duration and what each held."""
    long = np.flatnonzero(mask & (dab > LONG_GAP_FACTOR * max(median_gap, 0.0)))
    long = long[np.argsort(-dab[long], kind="stable")]
    ids = rows[st.ITERATION_ID_COL].to_numpy()
    listed = []
    for i in long[:MAX_LONG_GAPS]:
        held = [f"{kind} {int(count[i])} run(s), {time[i]:,.0f} us" for kind, (time, count) in split.by_kind.items()
                if count[i] > 0 and np.isfinite(time[i])]
        if input_us is not None and input_us[i] > 0.5 * dab[i]:
            held.insert(0, f"input {input_us[i]:,.0f} us")
        listed.append({"iteration": int(ids[i]), "duration_us": round(float(dab[i]), 1),
                       "cause": "; ".join(held) or "no other run recorded: host"})
    return {"factor": LONG_GAP_FACTOR, "count": int(len(long)), "listed": listed}


def row_causes(rows: pd.DataFrame, runs: Optional[OtherRuns]) -> list[str]:
    """Per row, what its Data Aug Bound held besides input, in words ("" when nothing was recorded there)."""
    if runs is None or not len(runs.kinds):
        return [""] * len(rows)
    split = split_rows(rows, runs)
    words = []
    for i in range(len(rows)):
        parts = [f"{kind}: {int(count[i])} run(s), {time[i]:,.0f} µs" for kind, (time, count) in split.by_kind.items()
                 if count[i] > 0 and np.isfinite(time[i])]
        words.append("; ".join(parts))
    return words
