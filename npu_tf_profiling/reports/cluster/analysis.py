"""The cluster analysis end to end: find the ranks, compute, write ``npu_tf_prof_cluster/``.

    OUTPUT_DIR/npu_tf_prof_cluster/
        cluster_step_trace_time.csv   per (step, rank) time breakdown
        slow_rank.json                slow ranks, causes, the votes, missing steps, communication shares
        slow_rank.txt                 the same as a text verdict (also printed by the command)
        cluster_timeline.json         every rank on one clock (Chrome trace / Perfetto)

Each file is written whole through a temporary name (``raw_format.atomic``),
so re-running replaces the previous analysis in one step. Never imports TensorFlow.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import pandas as pd

from npu_tf_profiling.reports.cluster import step_table as cst
from npu_tf_profiling.reports.cluster import timeline as ctl
from npu_tf_profiling.reports.cluster import slow_rank as sr
from npu_tf_profiling.reports.cluster.data import CLUSTER_OUTPUT_DIR, ClusterData, load_cluster
from npu_tf_profiling.raw_format.atomic import atomic_write_text


@dataclass
class ClusterAnalysis:
    data: ClusterData
    rows: pd.DataFrame  # cluster_step_trace_time rows
    report: sr.SlowRankReport
    alignment: ctl.ClockAlignment
    output_dir: Optional[Path] = None
    paths: list[Path] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    layout_notes: list[str] = field(default_factory=list)  # the msprof-analyze folders written for missing ranks


def analyze_cluster(root: Path | str, settings: sr.Settings = sr.Settings(), align: str = ctl.ALIGN_AUTO) -> ClusterAnalysis:
    """Load every rank under ``root`` and run the analyzers (nothing is written)."""
    data = load_cluster(root)
    ranks = cst.rank_rows(data.table)
    rows = cst.cluster_step_trace_time(data.table)
    alignment = ctl.align_clocks(data, align)
    notes = list(data.notes)
    if data.skipped_lines:
        notes.append(f"{data.skipped_lines} unreadable raw line(s) skipped (torn or corrupt; see the warnings)")
    if alignment.mode != "none":
        shifts = ", ".join(f"rank {r}: {s:+.0f} us" for r, s in sorted(alignment.shifts_us.items()))
        notes.append(f"timeline clocks aligned ({alignment.reason}): {shifts}")
    report = sr.analyze(ranks, data.all_rank_ids, hosts=data.hosts, notes=notes, settings=settings,
                        left_out=data.task_traced_steps())
    return ClusterAnalysis(data=data, rows=rows, report=report, alignment=alignment, notes=notes)


def write_cluster_analysis(root: Path | str, output_dir: Path | str | None = None, settings: sr.Settings = sr.Settings(),
                           align: str = ctl.ALIGN_AUTO, with_tasks: bool = True) -> ClusterAnalysis:
    """Analyse ``root`` and write the four files into ``output_dir`` (default ``root/npu_tf_prof_cluster``)."""
    analysis = analyze_cluster(root, settings, align)
    out = Path(output_dir) if output_dir is not None else Path(root) / CLUSTER_OUTPUT_DIR
    timeline, _, timeline_notes = ctl.cluster_timeline_json(analysis.data, analysis.alignment, with_tasks=with_tasks)
    if timeline_notes:
        analysis.report.notes.extend(timeline_notes)
        analysis.report.verdict = sr.render_text(analysis.report)
    paths = [out / cst.CSV_NAME, out / sr.JSON_NAME, out / sr.TEXT_NAME, out / ctl.JSON_NAME]
    atomic_write_text(paths[0], cst.to_csv(analysis.rows))
    atomic_write_text(paths[1], analysis.report.to_json())
    atomic_write_text(paths[2], analysis.report.verdict)
    atomic_write_text(paths[3], timeline)
    analysis.output_dir = out
    analysis.paths = paths
    analysis.layout_notes = _msprof_layouts(analysis.data)
    return analysis


def _msprof_layouts(data: ClusterData) -> list[str]:
    """Write the msprof-analyze folder of ranks that lack one (a killed worker); notes to print.

    Never fails the analysis: our files are already written.
    """
    from npu_tf_profiling.reports.msprof.writer import write_stale_rank_layouts

    try:
        ranks = write_stale_rank_layouts(data)
    except Exception as exc:  # noqa: BLE001 - the extra layout never costs the user the analysis
        return [f"msprof-analyze layout not written: {exc!r}"]
    if not ranks:
        return []
    return [f"msprof-analyze layout written for rank(s) {', '.join(map(str, ranks))} (missing or older than their raw data)"]
