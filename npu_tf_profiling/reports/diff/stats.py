"""How one phase changed between two runs: medians, p90s, the Hodges–Lehmann shift and its 95% interval.

The interval is the **Hodges–Lehmann estimator with the Mann–Whitney
(Wilcoxon rank-sum) confidence interval**, not a bootstrap: it needs no random
numbers (a CI job gets the same answer on the same files) and no model of the
times' shape (iteration times are skewed, with spikes). Over every pair
(baseline iteration x, candidate iteration y), the differences y − x are
formed; their median is the shift (for a distribution that moved as a whole,
the change in median), and the interval runs from the k-th smallest to the
k-th largest difference, k from the rank-sum statistic's null distribution
(its normal approximation: k = nm/2 − z·sqrt(nm(n+m+1)/12), without the ties
correction: times in whole µs tie often, and ties only make the interval a
little wider than it need be). Only numpy:
scipy is no dependency of the package.

The n·m differences are never formed: the k-th smallest is found by bisection
on its value, counting the differences below a value with one ``searchsorted``
(about 20 rounds to 0.01 µs; 100,000 iterations a side cost a fraction of a
second per phase, not 10^10 numbers).

What the interval does not cover: iterations of one run are not independent
(the machine's load comes and goes), so the interval is narrower than the
run-to-run spread of a repeated job. The diff's threshold (``compare``) is
what keeps that spread from failing a CI job.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

import numpy as np

Z_95 = 1.959963984540054  # two-sided 95%
MIN_ITERATIONS = 5  # per side: below this, no interval (the rank-sum test cannot reach 95% with fewer)
RESOLUTION_US = 0.01  # the bisection stops here: well under the clock's resolution (whole µs in the step trace)


def _count_at_most(x_sorted: np.ndarray, y: np.ndarray, d: float) -> int:
    """How many pairs have y − x <= d (``x_sorted`` ascending)."""
    # y_j - x_i <= d  <=>  x_i >= y_j - d
    return int(len(x_sorted) * len(y) - np.searchsorted(x_sorted, y - d, side="left").sum())


def kth_difference(x_sorted: np.ndarray, y_sorted: np.ndarray, k: int) -> float:
    """The k-th smallest (1-based) of all differences y − x, by bisection on its value (to ``RESOLUTION_US``)."""
    lo = float(y_sorted[0] - x_sorted[-1])
    hi = float(y_sorted[-1] - x_sorted[0])
    while hi - lo > RESOLUTION_US:
        mid = (lo + hi) / 2
        if _count_at_most(x_sorted, y_sorted, mid) >= k:
            hi = mid
        else:
            lo = mid
    return hi


def hodges_lehmann(x: np.ndarray, y: np.ndarray, z: float = Z_95) -> tuple[float, Optional[tuple[float, float]]]:
    """(shift, (low, high) or None): the median of all y − x, and its Mann–Whitney interval.

    The interval is None when a side has fewer than ``MIN_ITERATIONS`` values.
    """
    xs, ys = np.sort(x), np.sort(y)
    n, m = len(xs), len(ys)
    total = n * m
    middle = (total + 1) / 2
    shift = (kth_difference(xs, ys, math.floor(middle)) + kth_difference(xs, ys, math.ceil(middle))) / 2
    if n < MIN_ITERATIONS or m < MIN_ITERATIONS:
        return shift, None
    k = max(1, math.floor(total / 2 - z * math.sqrt(total * (n + m + 1) / 12)))
    return shift, (kth_difference(xs, ys, k), kth_difference(xs, ys, total - k + 1))


@dataclass
class PhaseChange:
    """One phase, baseline against candidate (µs; percentages of the baseline's median)."""

    phase: str
    baseline_iterations: int
    candidate_iterations: int
    baseline_median_us: float
    candidate_median_us: float
    baseline_p90_us: float
    candidate_p90_us: float
    change_us: float  # the Hodges–Lehmann shift
    change_pct: Optional[float]  # None when the baseline's median is 0
    ci_us: Optional[tuple[float, float]]
    ci_pct: Optional[tuple[float, float]]
    moved: int = 0  # set by the comparison: ``past`` with its threshold (+1 regressed, -1 improved, 0 neither)
    # Set by the comparison: this phase's shift over Iteration Time's (None when Iteration Time did not shift),
    # and whether it moved past the threshold while holding too little of that change to be a cause.
    part_of_change: Optional[float] = None
    secondary: bool = False

    @property
    def significant(self) -> bool:
        """The 95% interval leaves out 0."""
        return self.ci_us is not None and (self.ci_us[0] > 0 or self.ci_us[1] < 0)

    def past(self, threshold_pct: float, min_us: float = 0.0) -> int:
        """+1 a regression past the threshold (and at least ``min_us``), −1 an improvement past it, 0 neither."""
        if not self.significant or self.change_pct is None or abs(self.change_pct) < threshold_pct or abs(self.change_us) < min_us:
            return 0
        return 1 if self.change_us > 0 else -1

    def headline(self) -> str:
        """``+10.2% (+265 µs, 95% CI +9.8..+10.6%)``."""
        pct = "n/a %" if self.change_pct is None else f"{self.change_pct:+.1f}%"
        if self.ci_pct is not None:
            ci = f", 95% CI {self.ci_pct[0]:+.1f}..{self.ci_pct[1]:+.1f}%"
        elif self.ci_us is not None:
            ci = f", 95% CI {self.ci_us[0]:+.0f}..{self.ci_us[1]:+.0f} µs"
        else:
            ci = f", no CI: under {MIN_ITERATIONS} iterations"
        return f"{pct} ({self.change_us:+,.0f} µs{ci})"


def compare_phase(phase: str, baseline: np.ndarray, candidate: np.ndarray) -> Optional[PhaseChange]:
    """The change of one phase; None when a side has no measured value (NaN = not measured)."""
    x = baseline[~np.isnan(baseline)]
    y = candidate[~np.isnan(candidate)]
    if not len(x) or not len(y):
        return None
    shift, ci = hodges_lehmann(x, y)
    base = float(np.median(x))
    scale = 100.0 / base if base > 0 else None
    return PhaseChange(
        phase=phase, baseline_iterations=len(x), candidate_iterations=len(y),
        baseline_median_us=base, candidate_median_us=float(np.median(y)),
        baseline_p90_us=float(np.percentile(x, 90)), candidate_p90_us=float(np.percentile(y, 90)),
        change_us=shift, change_pct=None if scale is None else shift * scale, ci_us=ci,
        ci_pct=None if ci is None or scale is None else (ci[0] * scale, ci[1] * scale),
    )
