"""Baseline against candidate: per model and phase, per rank, the slow-rank verdicts, the verdict and exit code.

Rules (docs/commands.md, "Comparing two runs", says the same to users):

* models are matched by Model ID, ranks by rank (device id); a model or rank
  on one side only, other all-reduce groups, other fp/bp points and a phase
  measured on one side only are named in notes, and only what both sides
  have is compared;
* a change *counts* when its 95% interval (``stats``) leaves out 0 **and** it
  is at least the threshold, in % of the baseline's median. The verdict is
  about Iteration Time: a REGRESSION (exit code 4) when a model's Iteration
  Time rose past the threshold, an IMPROVEMENT when one fell past it and none
  rose, else no significant change; the phase that moved most, among Data Aug
  Bound, FP to BP and Iteration Refresh (they tile the iteration), is named
  as where it came from, with GetNext (inside Data Aug Bound) or Reduce
  (inside FP to BP or Iteration Refresh) when that inner phase holds most of
  it; on a cluster, also the rank whose own input or compute (Data Aug Bound,
  FP to BP) moved most: the others' share of a slow rank is waiting in Reduce.
* each phase's *part of the change* is its shift over Iteration Time's; when
  Iteration Time moved, a phase that moved past the threshold but holds under
  ``SECONDARY_PART`` of the change is marked *secondary*, not regressed or
  improved: a 5 ms sleep in the input map also moved FP to BP by +118 µs
  (+50.6%) and Iteration Refresh by +32 µs, and a reader sent looking for a
  compute regression finds none. The exit code is Iteration Time's alone;
* ``DEFAULT_THRESHOLD_PCT``: 20%. Two unchanged runs of one small model on
  this project's shared, loaded 2-core machine differ by up to about 11% upward
  (and more downward) in Iteration Time, with intervals that leave out 0: the
  interval, over the iterations of one run, does not see the run-to-run
  spread. 10% failed 2 of 30 such pairs, 20% none (benchmarks/RESULTS.md,
  "diff: false alarms").
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Optional

from npu_tf_profiling.exit_codes import EXIT_OK, EXIT_REGRESSION
from npu_tf_profiling.reports.cluster.analysis import ClusterAnalysis
from npu_tf_profiling.reports.diff.ops import OpChange, op_changes, per_iteration
from npu_tf_profiling.reports.diff.sides import PHASES, ModelSide, Side
from npu_tf_profiling.reports.diff.stats import PhaseChange, compare_phase
from npu_tf_profiling.reports.errors import NothingFoundError
from npu_tf_profiling.reports.view import phases as ph

DEFAULT_THRESHOLD_PCT = 20.0
# A phase (not Iteration Time) moves past the threshold only if its change is also this share of the baseline's
# median Iteration Time: a 2 µs Iteration Refresh that becomes 4 µs is +100%, and no reason to look.
MIN_PHASE_EFFECT = 0.01
SECONDARY_PART = 0.10  # a moved phase holding less of the Iteration Time change than this is secondary
TILING = (ph.DATA_AUG, ph.FP_BP, ph.REFRESH)
INNER = {ph.DATA_AUG: ph.GETNEXT, ph.FP_BP: ph.REDUCE, ph.REFRESH: ph.REDUCE}  # all-reduces lie in FP to BP or after BP End
POINT_PHASES = "FP to BP, Data Aug Bound and Iteration Refresh"

REGRESSION = "REGRESSION"
IMPROVEMENT = "IMPROVEMENT"
NO_CHANGE = "NO SIGNIFICANT CHANGE"


@dataclass
class RankDiff:
    """One rank of a cluster: its phases, and those that moved past the threshold."""

    rank: int
    phases: list[PhaseChange]
    regressed: list[PhaseChange]
    improved: list[PhaseChange]


@dataclass
class ModelDiff:
    model_id: int
    ranks: list[int]  # compared (on both sides)
    phases: list[PhaseChange]
    status: str
    source: Optional[str]  # where the Iteration Time change came from ("FP to BP (+9.9%)")
    rank_diffs: list[RankDiff] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    ops: list[OpChange] = field(default_factory=list)  # both sides task-traced: the ops that changed most

    def phase(self, name: str) -> Optional[PhaseChange]:
        return next((c for c in self.phases if c.phase == name), None)


@dataclass
class DiffReport:
    baseline: Side
    candidate: Side
    threshold_pct: float
    models: list[ModelDiff]
    notes: list[str] = field(default_factory=list)
    slow_ranks: Optional[tuple[str, str]] = None  # (baseline, candidate) slow-rank verdicts, clusters only

    @property
    def exit_code(self) -> int:
        return EXIT_REGRESSION if any(m.status == REGRESSION for m in self.models) else EXIT_OK

    @property
    def verdict(self) -> str:
        """The first line of the text."""
        for status in (REGRESSION, IMPROVEMENT):
            hits = sorted((m for m in self.models if m.status == status),
                          key=lambda m: -abs(m.phase(ph.ITERATION_TIME).change_pct or 0))
            if hits:
                line = f"{status}: {_iteration_line(hits[0], len(self.models))}"
                if hits[0].source:
                    line += f", from {hits[0].source}"
                if len(hits) > 1:
                    line += f"; {len(hits) - 1} more model(s) too"
                return line
        top = max(self.models, key=lambda m: abs(m.phase(ph.ITERATION_TIME).change_pct or 0))
        it = top.phase(ph.ITERATION_TIME)
        why = f"under the {self.threshold_pct:g}% threshold" if it.significant else "its 95% CI holds 0"
        return f"{NO_CHANGE}: {_iteration_line(top, len(self.models))}: {why}"


def _iteration_line(model: ModelDiff, models: int) -> str:
    where = f" (Model ID {model.model_id})" if models > 1 else ""
    return f"Iteration Time {model.phase(ph.ITERATION_TIME).headline()}{where}"


def _changes(baseline: dict, candidate: dict, threshold_pct: float) -> list[PhaseChange]:
    """Every phase both sides measured, each marked (``moved``) against the threshold."""
    out = [c for c in (compare_phase(name, baseline[name], candidate[name]) for name in PHASES) if c is not None]
    iteration_us = next((c.baseline_median_us for c in out if c.phase == ph.ITERATION_TIME), None)
    if iteration_us is None:  # no timed iteration on a side: nothing to weigh a phase against
        return []
    for c in out:
        c.moved = c.past(threshold_pct, 0.0 if c.phase == ph.ITERATION_TIME else MIN_PHASE_EFFECT * iteration_us)
    _rank_by_part(out)
    return out


def _rank_by_part(changes: list[PhaseChange]) -> None:
    """Each phase's part of the Iteration Time change, and which moved phases are only secondary (module docstring)."""
    it = next(c for c in changes if c.phase == ph.ITERATION_TIME)
    if it.change_us == 0:
        return
    for c in changes:
        c.part_of_change = c.change_us / it.change_us
        c.secondary = bool(it.moved and c is not it and c.moved and abs(c.part_of_change) < SECONDARY_PART)


def _source(changes: list[PhaseChange], direction: int) -> Optional[str]:
    """The tiling phase that moved most in the Iteration Time's direction, with its inner phase when that holds most of it."""
    by_name = {c.phase: c for c in changes}
    moved = [c for c in changes if c.significant and (c.change_us > 0) == (direction > 0)]
    tiling = [c for c in moved if c.phase in TILING] or [c for c in moved if c.phase in INNER.values()]
    if not tiling:
        return None
    best = max(tiling, key=lambda c: abs(c.change_us))
    text = f"{best.phase} ({_pct(best)})"
    inner = by_name.get(INNER.get(best.phase, ""))
    if inner is not None and inner in moved and abs(inner.change_us) >= 0.5 * abs(best.change_us):
        text += f", in {inner.phase} ({_pct(inner)})"
    return text


def _pct(change: PhaseChange) -> str:
    return f"{change.change_us:+,.0f} µs" if change.change_pct is None else f"{change.change_pct:+.1f}%"


def _shape_notes(base: ModelSide, cand: ModelSide, ranks: list[int]) -> list[str]:
    """Where the two runs differ in shape, for one model (on the ranks both have)."""
    notes = []
    for side, one, other in (("baseline", base, cand), ("candidate", cand, base)):
        only = sorted(set(one.ranks) - set(other.ranks))
        if only:
            notes.append(f"rank(s) {', '.join(map(str, only))} only in the {side}: left out")
    first_b, first_c = base.ranks[ranks[0]], cand.ranks[ranks[0]]
    groups = ({r: base.ranks[r].reduce_groups for r in ranks}, {r: cand.ranks[r].reduce_groups for r in ranks})
    if groups[0] != groups[1]:
        notes.append(f"all-reduce groups differ (baseline {max(groups[0].values())}, candidate {max(groups[1].values())}): "
                     "Reduce is the summed duration of each side's groups")
    for what, b, c in (("fp point", first_b.fp_point, first_c.fp_point), ("bp point", first_b.bp_point, first_c.bp_point)):
        if b != c and b is not None and c is not None:
            notes.append(f"{what} differs (baseline {b}, candidate {c}): {POINT_PHASES} span other ops on each side; "
                         "Iteration Time compares alike")
    for name in PHASES:
        has = [any(not _all_nan(s.ranks[r].phases[name]) for r in ranks) for s in (base, cand)]
        if has[0] != has[1]:
            notes.append(f"{name} measured in the {'baseline' if has[0] else 'candidate'} only: not compared")
    for side, model in (("baseline", base), ("candidate", cand)):
        left_out = sum(model.ranks[r].task_traced_left_out for r in ranks)
        if left_out:
            notes.append(f"{left_out} task-traced iteration(s) left out in the {side} (they time the profiler)")
        retraced = [f"rank {r} " * (len(ranks) > 1) + words for r in ranks for words in model.ranks[r].retraced]
        if retraced:
            notes.append(f"left out in the {side} like warm-up: " + "; ".join(retraced))
        if any(model.ranks[r].basis != "steady" for r in ranks):
            notes.append(f"the {side} has no steady iteration on some rank: its first iterations are used")
    return notes


def _all_nan(values) -> bool:
    return bool(len(values) == 0 or (values != values).all())


def compare_model(base: ModelSide, cand: ModelSide, threshold_pct: float) -> Optional[ModelDiff]:
    """One model's diff; None when no rank is on both sides or a side has no timed iteration."""
    ranks = sorted(set(base.ranks) & set(cand.ranks))
    if not ranks:
        return None
    changes = _changes(base.pooled(ranks), cand.pooled(ranks), threshold_pct)
    if not changes:
        return None
    direction = next(c for c in changes if c.phase == ph.ITERATION_TIME).moved
    status = {1: REGRESSION, -1: IMPROVEMENT, 0: NO_CHANGE}[direction]
    diff = ModelDiff(model_id=base.model_id, ranks=ranks, phases=changes, status=status,
                     source=_source(changes, direction) if direction else None, notes=_shape_notes(base, cand, ranks))
    if len(ranks) > 1:
        for rank in ranks:
            per_rank = _changes(base.ranks[rank].phases, cand.ranks[rank].phases, threshold_pct)
            diff.rank_diffs.append(RankDiff(rank, per_rank, [c for c in per_rank if c.moved > 0 and not c.secondary],
                                            [c for c in per_rank if c.moved < 0 and not c.secondary]))
        if direction:
            diff.source = "; ".join(filter(None, [diff.source, _rank_source(diff.rank_diffs, direction)]))
    return diff


def _rank_source(rank_diffs: list[RankDiff], direction: int) -> Optional[str]:
    """The rank whose own Data Aug Bound or FP to BP moved most in ``direction`` ("rank 2: FP to BP +40.7%")."""
    moved = [(r.rank, c) for r in rank_diffs for c in (r.regressed if direction > 0 else r.improved)
             if c.phase in (ph.DATA_AUG, ph.FP_BP)]
    if not moved:
        return None
    rank, change = max(moved, key=lambda item: abs(item[1].change_us))
    return f"rank {rank}: {change.phase} {_pct(change)}"


def slow_rank_line(cluster: Optional[ClusterAnalysis]) -> str:
    """One side's slow-rank verdict in a line ("" for one rank)."""
    if cluster is None:
        return "one rank: no slow-rank analysis"
    slow = cluster.report.slow_ranks
    if not slow:
        return "no slow rank"
    return "; ".join(f"SLOW RANK {s.rank} ({' + '.join(s.causes) or 'cause unknown'}"
                     f"{', the others wait for it' if s.makes_others_wait else ''})" for s in slow)


def compare_sides(baseline: Side, candidate: Side, threshold_pct: float = DEFAULT_THRESHOLD_PCT,
                  model_id: Optional[int] = None) -> DiffReport:
    """The diff of two read sides; raises ``NothingFoundError`` (exit 3) when they share no model (or not ``model_id``)."""
    if model_id is not None:
        for name, side in (("baseline", baseline), ("candidate", candidate)):
            if model_id not in side.models:
                raise NothingFoundError(f"Model ID {model_id} is not in the {name} ({side.path}; it has "
                                        f"{', '.join(map(str, sorted(side.models))) or 'none'})")
    common = sorted(set(baseline.models) & set(candidate.models)) if model_id is None else [model_id]
    notes = []
    for name, one, other in (("baseline", baseline, candidate), ("candidate", candidate, baseline)):
        only = sorted(set(one.models) - set(other.models))
        if only and model_id is None:
            notes.append(f"Model ID {', '.join(map(str, only))} only in the {name}: not compared")
    models = []
    for m in common:
        diff = compare_model(baseline.models[m], candidate.models[m], threshold_pct)
        if diff is None:
            notes.append(f"Model ID {m}: no rank with a timed iteration in both runs: not compared")
        else:
            models.append(diff)
    if not models:
        raise NothingFoundError(
            f"no model and rank in both runs (baseline: Model ID {', '.join(map(str, sorted(baseline.models)))} on rank(s) "
            f"{', '.join(map(str, baseline.rank_ids))}; candidate: Model ID {', '.join(map(str, sorted(candidate.models)))} "
            f"on rank(s) {', '.join(map(str, candidate.rank_ids))})")
    report = DiffReport(baseline, candidate, threshold_pct, models, notes)
    base_ops, cand_ops = per_iteration(baseline.found), per_iteration(candidate.found)
    for model in models:
        if model.model_id in base_ops and model.model_id in cand_ops:
            model.ops = op_changes(base_ops[model.model_id], cand_ops[model.model_id])
        elif model.model_id in base_ops or model.model_id in cand_ops:
            side = "baseline" if model.model_id in base_ops else "candidate"
            model.notes.append(f"task traces in the {side} only: no op comparison")
    if baseline.found.cluster is not None or candidate.found.cluster is not None:
        report.slow_ranks = (slow_rank_line(baseline.found.cluster), slow_rank_line(candidate.found.cluster))
    return report
