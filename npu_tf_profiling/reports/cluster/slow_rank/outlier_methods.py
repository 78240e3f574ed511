"""The per-step high-outlier tests: Dixon's Q for fewer than 10 ranks, leave-one-out 3 sigma above; and the binomial tail."""
from __future__ import annotations

import functools
import math

import numpy as np

# Dixon's Q (r10) critical values, 95% confidence, n = 3..9 (Rorabacher 1991).
DIXON_Q95 = {3: 0.970, 4: 0.829, 5: 0.710, 6: 0.625, 7: 0.568, 8: 0.526, 9: 0.493}
DIXON_MAX_RANKS = 9  # "fewer than 10 ranks"
SIGMAS = 3.0


def method_for(n: int) -> str:
    """The outlier test used for n ranks: "dixon", "3sigma", or "none" under 3."""
    if n < 3:
        return "none"
    return "dixon" if n <= DIXON_MAX_RANKS else "3sigma"


def method_description(n_ranks: int) -> str:
    kind = method_for(n_ranks)
    if kind == "dixon":
        return f"Dixon's Q test (95%, critical Q {DIXON_Q95[n_ranks]:.3f} for {n_ranks} ranks)"
    if kind == "3sigma":
        return "3 sigma (above mean + 3 std of the other ranks)"
    return "no outlier test (fewer than 3 ranks); the wait vote and per-phase excess decide"


def high_outliers(values: np.ndarray) -> np.ndarray:
    """Boolean mask of high outliers per row (the test picked by the row's count of values)."""
    n_rows, n_cols = values.shape
    flags = np.zeros((n_rows, n_cols), dtype=bool)
    if n_rows == 0 or n_cols < 3:
        return flags
    present = ~np.isnan(values)
    n = present.sum(axis=1)
    # Dixon: the largest value of rows with 3..9 values.
    dixon = (n >= 3) & (n <= DIXON_MAX_RANKS)
    if dixon.any():
        rows = np.flatnonzero(dixon)
        sub = values[rows]
        ordered = np.sort(sub, axis=1)  # NaN last
        k = n[rows]
        top = ordered[np.arange(len(rows)), k - 1]
        second = ordered[np.arange(len(rows)), k - 2]
        spread = top - ordered[:, 0]
        crit = np.array([DIXON_Q95[int(c)] for c in k])
        with np.errstate(divide="ignore", invalid="ignore"):
            q = np.where(spread > 0, (top - second) / spread, 0.0)
        hit = q > crit
        cols = np.nanargmax(np.where(np.isnan(sub), -np.inf, sub), axis=1)
        flags[rows[hit], cols[hit]] = True
    # 3 sigma, leave-one-out: rows with 10 values or more.
    sigma = n > DIXON_MAX_RANKS
    if sigma.any():
        rows = np.flatnonzero(sigma)
        sub = values[rows]
        m = n[rows][:, None].astype("float64")
        total = np.nansum(sub, axis=1)[:, None]
        squares = np.nansum(sub * sub, axis=1)[:, None]
        with np.errstate(invalid="ignore", divide="ignore"):
            mean_o = (total - sub) / (m - 1)
            var_o = (squares - sub * sub - (m - 1) * mean_o * mean_o) / (m - 2)
            std_o = np.sqrt(np.maximum(var_o, 0.0))
            hit = (sub > mean_o + SIGMAS * std_o) & (sub > mean_o) & ~np.isnan(sub)
        flags[rows] = hit
    return flags


def binomial_tail(k: int, n: int, p: float) -> float:
    """P(X >= k) for X ~ Binomial(n, p), summed in log space (no scipy; n may be thousands of steps)."""
    if k <= 0:
        return 1.0
    if p >= 1.0:
        return 1.0
    total = 0.0
    for term in _binomial_terms(n, p)[k:]:
        total += term
    return min(1.0, total)


@functools.lru_cache(maxsize=64)
def _binomial_terms(n: int, p: float) -> tuple[float, ...]:
    """P(X = i) for i = 0..n: computed once per (steps, ranks), as thousands of ranks ask with the same n and p."""
    log_p, log_q = math.log(p), math.log1p(-p)
    base = math.lgamma(n + 1)
    return tuple(math.exp(base - math.lgamma(i + 1) - math.lgamma(n - i + 1) + i * log_p + (n - i) * log_q) for i in range(n + 1))
