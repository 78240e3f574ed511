"""Small interval-set arithmetic for the overlap tracks (a few intervals per iteration).

An interval set is a sorted list of disjoint ``(start, end)`` pairs with
``start < end``. The functions take any pairs (unsorted, overlapping, empty or
with NaN ends, which are dropped) and return such a set.
"""
from __future__ import annotations

import math
from typing import Iterable

Interval = tuple[float, float]


def normalize(pairs: Iterable[Interval]) -> list[Interval]:
    """The union of ``pairs`` as a sorted list of disjoint, non-empty intervals."""
    usable = sorted((s, e) for s, e in pairs if not (math.isnan(s) or math.isnan(e)) and e > s)
    out: list[Interval] = []
    for start, end in usable:
        if out and start <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    return out


def clip(pairs: Iterable[Interval], lo: float, hi: float) -> list[Interval]:
    """The parts of ``pairs`` inside [lo, hi]."""
    return normalize((max(s, lo), min(e, hi)) for s, e in pairs)


def subtract(pairs: Iterable[Interval], removed: Iterable[Interval]) -> list[Interval]:
    """The parts of ``pairs`` not covered by ``removed``."""
    cuts = normalize(removed)
    out: list[Interval] = []
    for start, end in normalize(pairs):
        cursor = start
        for cut_start, cut_end in cuts:
            if cut_end <= cursor or cut_start >= end:
                continue
            if cut_start > cursor:
                out.append((cursor, cut_start))
            cursor = max(cursor, cut_end)
            if cursor >= end:
                break
        if cursor < end:
            out.append((cursor, end))
    return out


def total(pairs: Iterable[Interval]) -> float:
    return sum(e - s for s, e in normalize(pairs))
