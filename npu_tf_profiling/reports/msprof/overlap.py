"""The "Overlap Analysis" intervals of each iteration: where its Computing, Communication and Free are.

torch_npu's timeline shows, per step, when the device computed, communicated
(and whether that was hidden behind compute) and idled; msprof-analyze and
MindStudio Insight sum those tracks into the step table. Ours are cut from the
step-trace points with the step table's own definitions
(``cluster.step_table``), so each track's total per iteration equals that
iteration's number in ``step_trace_time.csv``:

* window W = [iteration start, Iteration End];
* Communication = the union of the iteration's Reduce intervals R, inside W;
* Computing = [FP Start, BP End] plus the part of [BP End, Iteration End] not in R, inside W;
* Communication(Not Overlapped) = Communication outside [FP Start, BP End];
* Free = the rest of W.

An iteration without FP/BP points gets only its Communication intervals.

Why a sweep over columns: a rank of 1,000 iterations has thousands of such
intervals, and ``cluster --layouts`` writes them for every rank. All the
iterations' sets are combined at once: every interval's ends become +1/-1
events of its set, sorted per iteration; between two neighbouring event
points each set either covers the stretch or not, and a track is the union
of the stretches its rule keeps, neighbours merged. The ends are the input
floats themselves (no arithmetic on them), and each track comes out as the
same maximal, non-empty intervals that interval arithmetic gives.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from npu_tf_profiling.reports.cluster import step_table as cst
from npu_tf_profiling.reports.msprof.rank_model import BP_US, END_US, FP_US, START_US

COMPUTING = "Computing"
COMMUNICATION = "Communication"
NOT_OVERLAPPED = "Communication(Not Overlapped)"
FREE = "Free"
KINDS = (COMPUTING, COMMUNICATION, NOT_OVERLAPPED, FREE)

# The sets swept per iteration, as columns of the coverage matrix.
_W, _FPBP, _AFTER, _R = range(4)


@dataclass
class OverlapSpans:
    """Every iteration's track intervals, one row per interval, ordered by iteration, kind (``KINDS``), start.

    ``row`` indexes the iterations that have a window (``model_id``/``step`` give theirs).
    """

    model_id: np.ndarray  # per iteration with a window
    step: np.ndarray
    row: np.ndarray  # per interval
    kind: np.ndarray
    start: np.ndarray
    end: np.ndarray


def _usable(start: np.ndarray, end: np.ndarray) -> np.ndarray:
    return ~np.isnan(start) & ~np.isnan(end) & (end > start)


def _coverage(groups: list[np.ndarray], starts: list[np.ndarray], ends: list[np.ndarray], n_sets: int
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The event points per group in order, and after each point how many intervals of each set cover it.

    Returns (group, x, counts [points x sets], whether the next point is in the same group).
    """
    g_parts, x_parts, d_parts = [], [], []
    for k, (g, s, e) in enumerate(zip(groups, starts, ends)):
        keep = _usable(s, e)
        g, s, e = g[keep], s[keep], e[keep]
        delta = np.zeros((2 * len(g), n_sets), dtype=np.int64)
        delta[: len(g), k], delta[len(g):, k] = 1, -1
        g_parts += [g, g]
        x_parts += [s, e]
        d_parts.append(delta)
    group, x, delta = np.concatenate(g_parts), np.concatenate(x_parts), np.concatenate(d_parts)
    order = np.lexsort((x, group))
    group, x, delta = group[order], x[order], delta[order]
    first = np.ones(len(x), dtype=bool)
    first[1:] = (group[1:] != group[:-1]) | (x[1:] != x[:-1])
    at = np.flatnonzero(first)
    counts = np.cumsum(np.add.reduceat(delta, at, axis=0), axis=0) if len(at) else np.zeros((0, n_sets), dtype=np.int64)
    group, x = group[at], x[at]
    same_next = np.zeros(len(at), dtype=bool)
    same_next[:-1] = group[1:] == group[:-1]
    return group, x, counts, same_next


def _runs(group: np.ndarray, x: np.ndarray, inside: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Maximal runs of kept stretches (point i to point i+1): their group, start and end."""
    before = np.zeros(len(inside), dtype=bool)
    before[1:] = inside[:-1]
    after = np.zeros(len(inside), dtype=bool)
    after[:-1] = inside[1:]
    begins, last = np.flatnonzero(inside & ~before), np.flatnonzero(inside & ~after)
    return group[begins], x[begins], x[last + 1]


def overlap_spans(steps: pd.DataFrame, comm_ops: pd.DataFrame) -> OverlapSpans:
    """The four tracks of every iteration with a known window, in ``steps`` order."""
    model, step, start, end, fp, bp = (steps[c].to_numpy(dtype="float64") for c in (cst.MODEL_ID, cst.STEP, START_US, END_US, FP_US, BP_US))
    windowed = ~np.isnan(start) & ~np.isnan(end)
    model, step, start, end, fp, bp = (a[windowed] for a in (model, step, start, end, fp, bp))
    rows = np.arange(len(start))
    points = ~np.isnan(fp) & ~np.isnan(bp)
    # Each all-reduce joins the windowed iteration(s) of its (model, step); one of no such iteration is dropped.
    joined = pd.DataFrame({"model": model.astype(np.int64), "step": step.astype(np.int64), "row": rows}).merge(
        pd.DataFrame({"model": comm_ops["model_id"].to_numpy().astype(np.int64), "step": comm_ops["step"].to_numpy().astype(np.int64),
                      "start": comm_ops["start_us"].to_numpy(dtype="float64"), "end": comm_ops["end_us"].to_numpy(dtype="float64")}),
        on=["model", "step"], sort=False)
    op_row, op_start, op_end = (joined[c].to_numpy() for c in ("row", "start", "end"))
    group, x, counts, same_next = _coverage(
        [rows, rows[points], rows[points], op_row.astype(np.int64)], [start, fp[points], bp[points], op_start],
        [end, bp[points], end[points], op_end], 4)
    cover = counts > 0
    has_points = points[group] if len(group) else np.zeros(0, dtype=bool)
    w, fpbp, after, r = (cover[:, k] & same_next for k in (_W, _FPBP, _AFTER, _R))
    rules = {
        COMPUTING: w & has_points & (fpbp | (after & ~r)),
        COMMUNICATION: w & r,
        NOT_OVERLAPPED: w & r & has_points & ~fpbp,
        FREE: w & has_points & ~fpbp & ~after & ~r,
    }
    parts = [_runs(group, x, inside) for inside in rules.values()]
    row = np.concatenate([p[0] for p in parts])
    kind = np.concatenate([np.full(len(p[0]), k, dtype=np.int64) for k, p in enumerate(parts)])
    begin, finish = np.concatenate([p[1] for p in parts]), np.concatenate([p[2] for p in parts])
    order = np.lexsort((begin, kind, row))
    return OverlapSpans(model_id=model.astype(np.int64), step=step.astype(np.int64), row=row[order], kind=kind[order],
                        start=begin[order], end=finish[order])
