"""Which window a time falls in: the one answer the host reports and ``advise`` give.

A time stamp (a stack sample, a GC pause, a run's start) meets the step trace's
windows (an iteration, its Data Aug Bound gap) in the summary's host lines, the
host files and the advice; written once, "between iterations" means the same in all three.
"""
from __future__ import annotations

import numpy as np


def window_index(starts: np.ndarray, ends: np.ndarray, times: np.ndarray) -> np.ndarray:
    """Index of the window [start, end) each time falls in, -1 for none (windows must not overlap; NaN ones are skipped)."""
    known = np.isfinite(starts) & np.isfinite(ends)
    starts, ends = starts[known], ends[known]
    order = np.argsort(starts, kind="stable")
    starts, ends, index = starts[order], ends[order], np.flatnonzero(known)[order]
    k = np.searchsorted(starts, times, side="right") - 1
    inside_one = (k >= 0) & (times < ends[np.maximum(k, 0)]) if len(starts) else np.zeros(len(times), bool)
    return np.where(inside_one, index[np.maximum(k, 0)] if len(starts) else -1, -1)


def inside(times: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Which times fall in one of the windows [start, end] (any order; overlapping ones are merged first)."""
    if not len(starts) or not len(times):
        return np.zeros(len(times), bool)
    order = np.argsort(starts, kind="stable")
    starts, ends = starts[order], np.maximum.accumulate(ends[order])
    k = np.searchsorted(starts, times, side="right") - 1
    return (k >= 0) & (times <= ends[np.maximum(k, 0)])
