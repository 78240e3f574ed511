"""The Overlap Analysis tracks, swept over columns, equal per-iteration interval arithmetic on any input.

The reference below computes each iteration's tracks from the rules in ``overlap``'s docstring, one
interval list at a time (what the writer did before the sweep). Hypothesis draws iterations with
missing points, empty or reversed windows, reversed FP/BP, and all-reduces that overlap, touch,
stick out of the window, repeat or belong to no iteration.
"""
from __future__ import annotations

import math

import numpy as np
import pandas as pd
from hypothesis import given, settings
from hypothesis import strategies as hst

from npu_tf_profiling.reports.cluster import step_table as cst
from npu_tf_profiling.reports.msprof import overlap
from npu_tf_profiling.reports.msprof.rank_model import BP_US, END_US, FP_US, START_US

Interval = tuple[float, float]


def _normalize(pairs: list[Interval]) -> list[Interval]:
    usable = sorted((s, e) for s, e in pairs if not (math.isnan(s) or math.isnan(e)) and e > s)
    out: list[Interval] = []
    for start, end in usable:
        if out and start <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], end))
        else:
            out.append((start, end))
    return out


def _clip(pairs: list[Interval], lo: float, hi: float) -> list[Interval]:
    return _normalize([(max(s, lo), min(e, hi)) for s, e in pairs])


def _subtract(pairs: list[Interval], removed: list[Interval]) -> list[Interval]:
    cuts, out = _normalize(removed), []
    for start, end in _normalize(pairs):
        cursor = start
        for cut_start, cut_end in cuts:
            if cut_end <= cursor or cut_start >= end:
                continue
            if cut_start > cursor:
                out.append((cursor, cut_start))
            cursor = max(cursor, cut_end)
        if cursor < end:
            out.append((cursor, end))
    return out


def _reference(steps: pd.DataFrame, ops: pd.DataFrame) -> list[tuple[int, int, float, float]]:
    """(row among the windowed iterations, kind, start, end) in iteration, kind, start order."""
    out, row = [], 0
    for model, step, start, end, fp, bp in steps[[cst.MODEL_ID, cst.STEP, START_US, END_US, FP_US, BP_US]].itertuples(index=False):
        if math.isnan(start) or math.isnan(end):
            continue
        mine = ops[(ops["model_id"] == model) & (ops["step"] == step)]
        comm = _clip(list(zip(mine["start_us"], mine["end_us"])), start, end)
        spans = {kind: [] for kind in overlap.KINDS}
        spans[overlap.COMMUNICATION] = comm
        if not (math.isnan(fp) or math.isnan(bp)):
            spans[overlap.COMPUTING] = _normalize(_clip([(fp, bp)], start, end) + _subtract(_clip([(bp, end)], start, end), comm))
            spans[overlap.NOT_OVERLAPPED] = _subtract(comm, [(fp, bp)])
            spans[overlap.FREE] = _subtract([(start, end)], spans[overlap.COMPUTING] + comm)
        out += [(row, k, s, e) for k, kind in enumerate(overlap.KINDS) for s, e in spans[kind]]
        row += 1
    return out


_time = hst.one_of(hst.integers(0, 40).map(float), hst.just(math.nan))


@hst.composite
def _runs(draw):
    n = draw(hst.integers(0, 6))
    steps = pd.DataFrame({
        cst.MODEL_ID: [float(draw(hst.integers(1, 2))) for _ in range(n)],
        cst.STEP: [float(draw(hst.integers(1, 4))) for _ in range(n)],
        START_US: [draw(_time) for _ in range(n)], END_US: [draw(_time) for _ in range(n)],
        FP_US: [draw(_time) for _ in range(n)], BP_US: [draw(_time) for _ in range(n)],
    })
    m = draw(hst.integers(0, 8))
    ops = pd.DataFrame({
        "step": [float(draw(hst.integers(1, 4))) for _ in range(m)], "model_id": [float(draw(hst.integers(1, 2))) for _ in range(m)],
        "group": list(range(1, m + 1)), "start_us": [draw(_time) for _ in range(m)], "end_us": [draw(_time) for _ in range(m)],
    })
    return steps, ops


@settings(max_examples=400, deadline=None)
@given(_runs())
def test_the_sweep_equals_interval_arithmetic(run):
    steps, ops = run
    spans = overlap.overlap_spans(steps, ops)
    got = list(zip(spans.row.tolist(), spans.kind.tolist(), spans.start.tolist(), spans.end.tolist()))
    assert got == _reference(steps, ops)
    windowed = steps[~steps[START_US].isna() & ~steps[END_US].isna()]
    assert spans.step.tolist() == windowed[cst.STEP].astype(np.int64).tolist()


def test_a_rank_without_all_reduces_has_only_its_compute_and_free_time():
    steps = pd.DataFrame({cst.MODEL_ID: [1.0], cst.STEP: [7.0], START_US: [0.0], END_US: [10.0], FP_US: [2.0], BP_US: [8.0]})
    ops = pd.DataFrame({c: pd.Series([], dtype="float64") for c in ("step", "model_id", "group", "start_us", "end_us")})
    spans = overlap.overlap_spans(steps, ops)
    assert [(overlap.KINDS[k], s, e) for k, s, e in zip(spans.kind.tolist(), spans.start.tolist(), spans.end.tolist())] == [
        (overlap.COMPUTING, 2.0, 10.0), (overlap.FREE, 0.0, 2.0)]
