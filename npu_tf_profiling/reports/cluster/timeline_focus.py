"""Which ranks the merged timeline draws for a large cluster: those the verdict names, and a yardstick.

The charts page (``view``) draws the same ranks' PROF folders in full.

A merged timeline has a process row per rank. Past a few dozen rows nobody
reads it, and at 1,024 ranks x 1,000 steps it is some 1.7 GB of JSON whose
writing was most of the cluster command's time. So past ``ALL_RANKS_MAX``
ranks the default (``--timeline auto``) draws:

* the ranks the verdict names (slow ranks, then those the others wait for,
  then the compute and input outliers), at most ``NAMED_MAX``;
* a typical rank (the median of the ranks' median Iteration Time) and the
  fastest one, so the slow rank is seen beside ranks that are not.

``--timeline all`` draws every rank, grouped into files that open
(``timeline_files``); ``cluster_step_trace_time.csv`` and ``slow_rank.json``
always hold every rank.
"""
from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from npu_tf_profiling.reports.cluster import step_table as cst
from npu_tf_profiling.reports.cluster.slow_rank.verdict import SlowRankReport

TIMELINE_AUTO = "auto"
TIMELINE_ALL = "all"
TIMELINE_CHOICES = (TIMELINE_AUTO, TIMELINE_ALL)
ALL_RANKS_MAX = 32
NAMED_MAX = 8


@dataclass(frozen=True)
class Focus:
    """The drawn ranks, each with why (``slow: input``, ``typical``, ``fastest``), in rank order."""

    reasons: dict[int, str]

    def of_ranks(self, total: int) -> str:
        """``"512 (slow: input), 17 (typical), 4 (fastest) of 1024"``."""
        return ", ".join(f"{rank} ({why})" for rank, why in sorted(self.reasons.items())) + f" of {total}"

    def note(self, total: int) -> str:
        return (f"timeline: {len(self.reasons)} ranks drawn, {self.of_ranks(total)}; "
                f"'--timeline all' draws every rank (grouped per host into files that open)")


def draws_every_rank(mode: str, ranks: int) -> bool:
    return mode == TIMELINE_ALL or ranks <= ALL_RANKS_MAX


def focus_ranks(report: SlowRankReport, rows: pd.DataFrame) -> Focus:
    """The ranks to draw (see the module docstring); ``rows`` holds Index (the rank) and Iteration Time per step."""
    reasons: dict[int, str] = {}
    named = [(s.rank, "slow: " + ", ".join(s.causes) if s.causes else "slow") for s in report.slow_ranks]
    named += [(r, "others wait for it") for r in report.wait.waited_for]
    named += [(r, "compute outlier") for r in report.compute.slow_ranks]
    named += [(r, "input outlier") for r in report.input.slow_ranks]
    for rank, why in named:
        if len(reasons) == NAMED_MAX:
            break
        reasons.setdefault(int(rank), why)
    medians = rows.groupby(cst.INDEX)[cst.ITERATION_TIME].median().dropna().sort_values(kind="stable")
    if len(medians):
        typical = int(medians.index[(len(medians) - 1) // 2])
        fastest = int(medians.index[0])
        reasons.setdefault(typical, "typical")
        reasons.setdefault(fastest, "fastest")
    return Focus(dict(sorted(reasons.items())))
