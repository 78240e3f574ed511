"""Which rank is slow, why, and which steps are missing: ``slow_rank.json`` and the text verdict.

Input: the per-(step, rank) rows of ``cluster_step_trace`` (durations only, so
the verdict does not depend on the ranks' clocks agreeing). One analyzer per
question:

1. ``outliers`` (is a rank slow in compute or in input?). For each step, the
   ranks' values of a metric (FP to BP Time = compute, Data Aug Bound = input)
   are tested for a high outlier:

   * fewer than 10 ranks: **Dixon's Q test** at 95% confidence (Rorabacher's
     critical values, n = 3..9): Q = (largest - second largest) / range;
   * 10 ranks or more: **3σ**: a value above mean + 3·std of the *other*
     ranks (leaving the rank out, so one slow rank cannot hide by inflating σ);
   * either way only a difference that matters counts: the value must exceed
     the other ranks' median by ``min_effect`` (5% of the step's median
     Iteration Time, and at least 50 µs).

   A rank is **consistently slow** in a metric when it is the outlier in at
   least half of the steps tested, or when the same test flags its median over
   all steps among the ranks' medians (robust to noisy steps: with 3 ranks,
   Dixon's test wants the other two within 3% of the range). With fewer than 3
   ranks no outlier test exists; the wait vote below still works.
2. ``wait_votes`` (who makes the others wait?). A synchronous all-reduce ends
   when the last rank arrives, so the ranks that arrived first sit in it: the
   waiting ranks show a long Reduce, the rank they wait for a short one. Each
   step votes for the rank with the shortest Reduce (summed over groups) when
   the other ranks' median Reduce exceeds it by ``min_effect``; a rank with at
   least half of the steps' votes makes the others wait, if that many votes
   are also unlikely by chance (binomial tail, each rank winning a step with
   probability 1/ranks, p <= 0.01: with 2 ranks, 10 votes in 20 steps are a
   coin's luck, 20 in 20 are not).
3. ``causes``: a rank that makes others wait and is consistently slow in
   Data Aug Bound is slow in **input**, in FP to BP in **compute**. When
   neither test applies (2 ranks) or neither flags it, the cause is the phase
   whose per-step excess over the other ranks' median is larger ("likely"),
   or "unknown" when neither exceeds ``min_effect`` (of the median step).
4. ``missing_steps``: per model, every step any rank has; a rank lacking some
   is listed (a rank that stopped early, a record lost in a crash), and so is
   a step that every rank lacks inside the range (a hole in all ranks' data).
   Missing steps are left out of the per-step tests, never filled in.

Sporadic outliers (a step slow on one rank only, the rank otherwise fine) are
listed too, largest first.

Steps task_trace disturbed on any rank (a FULL_TRACE step and the one after
it, ``reports.task.traced``), and steps whose call retraced its step on any rank
(``reports.step.retraces``), are left out of questions 1-3 for every rank and
named in a note a kind; they still count as present for question 4.
"""
from __future__ import annotations

from npu_tf_profiling.reports.cluster.slow_rank.common import JSON_NAME, TEXT_NAME, Settings
from npu_tf_profiling.reports.cluster.slow_rank.missing import missing_steps
from npu_tf_profiling.reports.cluster.slow_rank.outlier_methods import binomial_tail, high_outliers, method_description
from npu_tf_profiling.reports.cluster.slow_rank.outliers import MetricResult, outliers
from npu_tf_profiling.reports.cluster.slow_rank.render import render_text
from npu_tf_profiling.reports.cluster.slow_rank.verdict import RETRACED, TASK_TRACED, SlowRankReport, analyze
from npu_tf_profiling.reports.cluster.slow_rank.waits import WaitResult, wait_votes

__all__ = [
    "JSON_NAME", "RETRACED", "TASK_TRACED", "TEXT_NAME", "MetricResult", "Settings", "SlowRankReport", "WaitResult",
    "analyze", "binomial_tail", "high_outliers", "method_description", "missing_steps", "outliers", "render_text", "wait_votes",
]
