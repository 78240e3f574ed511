"""The cluster analysis end to end: find the ranks, compute, write ``npu_tf_prof_cluster/``.

    OUTPUT_DIR/npu_tf_prof_cluster/
        cluster_step_trace_time.csv   per (step, rank) time breakdown (sliced by steps past 200 MiB: ``csv_files``)
        slow_rank.json                slow ranks, causes, the votes, missing steps, communication shares
        slow_rank.txt                 the same as a text verdict (also printed by the command)
        cluster_timeline.json         the ranks on one clock (Chrome trace / Perfetto): every rank up to
                                      32, else those the verdict names and a yardstick (``timeline_focus``);
                                      with many rows, cluster_timeline/<host>_ranks_<a>-<b>.json (``timeline_files``)

Three steps, all on Dask (``engine``): per-rank tasks (``rank_task``: read,
step formulas, CSV lines, whether the rank's msprof-analyze folder is
missing) return compact columns; the cross-rank work (the CSV's merge, the
slow-rank tests, clock alignment) runs here on those columns only; one task
per timeline file writes it, and one per batch of ranks lacking an
msprof-analyze folder writes those (``rank_layouts``). Each file is written whole through a temporary name
(``raw_format.atomic``), so re-running replaces the previous analysis in one
step. Never imports TensorFlow.
"""
from __future__ import annotations

import json
import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import pandas as pd

from npu_tf_profiling.raw_format import own_files
from npu_tf_profiling.raw_format.atomic import atomic_write_text
from npu_tf_profiling.reports.cluster import step_table as cst
from npu_tf_profiling.reports.cluster.anomalies import JSON_NAME as ANOMALIES_JSON
from npu_tf_profiling.reports.cluster.anomalies import anomaly_notes, cluster_anomalies
from npu_tf_profiling.reports.cluster import timeline as ctl
from npu_tf_profiling.reports.cluster import timeline_files as tlf
from npu_tf_profiling.reports.cluster import timeline_focus as tfo
from npu_tf_profiling.reports.cluster import slow_rank as sr
from npu_tf_profiling.reports.cluster.data import (
    CLUSTER_OUTPUT_DIR, RankFound, RankSet, check_one_folder_per_rank, rank_folders, rank_notes,
)
from npu_tf_profiling.reports.cluster.csv_files import write_csv
from npu_tf_profiling.reports.cluster.engine import Engine, batches, open_engine
from npu_tf_profiling.reports.cluster.rank_layouts import fill_layouts
from npu_tf_profiling.reports.cluster.rank_task import SYNC_END, SYNC_REDUCE, RankPart, TaskOptions, rank_batch
from npu_tf_profiling.reports.step import records as raw_mod


@dataclass
class ClusterAnalysis(RankSet):
    root: Path
    ranks: list[RankPart]  # ranks with iteration records, by rank (their ``rows`` moved into ``rows``)
    empty_ranks: list[RankPart]  # rank folders without any record
    rows: pd.DataFrame  # per (model, step, rank): Model ID, Step, Index and ANALYSIS_COLUMNS (+ the view's columns)
    report: sr.SlowRankReport
    alignment: ctl.ClockAlignment
    engine: str = ""  # where the tasks ran
    traced_steps: frozenset[tuple[int, int]] = frozenset()
    retraced_steps: frozenset[tuple[int, int]] = frozenset()  # a call retraced its step there, on some rank
    output_dir: Optional[Path] = None
    paths: list[Path] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    file_notes: list[str] = field(default_factory=list)  # what was written beside the files, or left out: rank folders, timeline ranks


def analyze_cluster(root: Path | str, settings: sr.Settings = sr.Settings(), align: str = ctl.ALIGN_AUTO,
                    scheduler: Optional[str] = None, view_columns: bool = False) -> ClusterAnalysis:
    """Run the per-rank tasks and the cross-rank analyzers on ``scheduler`` (None: in this process); writes nothing.

    ``view_columns``: the rows also carry what the charts page's medians need (``rank_task.TaskOptions``)."""
    with open_engine(scheduler) as engine:
        folders = [(str(p), str(d)) for p, d in rank_folders(root)]
        return _analyze(Path(root), folders, engine, settings, align, TaskOptions(view_columns=view_columns))


def _analyze(root: Path, folders: list[tuple[str, str]], engine: Engine, settings: sr.Settings, align: str,
             options: TaskOptions, all_layouts: bool = False) -> ClusterAnalysis:
    """The per-rank tasks and the cross-rank work; with ``options.check_layouts``, the missing msprof-analyze
    folders are written (``rank_layouts``: up to 16, or all with ``all_layouts``)."""
    found = [part for batch in engine.map(rank_batch, batches(folders, workers=engine.workers), options) for part in batch]
    claims: dict[int, list[Path]] = {}
    for part in found:
        claims.setdefault(part.rank, []).append(Path(part.device_dir))
    check_one_folder_per_rank(root, claims)
    found.sort(key=lambda p: p.rank)
    notes = rank_notes(root, [RankFound(p.rank, Path(p.device_dir), p.info, p.has_trace, p.count > 0, tuple(p.run_counter_models))
                              for p in found])
    parts = [p for p in found if p.count]
    empty = [p for p in found if not p.count]
    skipped = sum(p.skipped_lines for p in found)
    if skipped:
        notes.append(f"{skipped} unreadable raw line(s) skipped (torn or corrupt; see the warnings)")
    rows = pd.concat([p.rows for p in parts], ignore_index=True)
    for part in parts:
        part.rows = None  # one copy of the columns: ``rows``
    hosts = sorted({p.host for p in parts if p.host})
    sync = lambda: ctl.sync_frame(rows[cst.INDEX].to_numpy(), rows[cst.MODEL_ID].to_numpy(), rows[cst.STEP].to_numpy(),  # noqa: E731
                                  rows[SYNC_REDUCE].to_numpy(), rows[SYNC_END].to_numpy())
    alignment = ctl.align_points([p.rank for p in parts], hosts, sync, align)
    rows = rows.drop(columns=[SYNC_REDUCE, SYNC_END])
    if alignment.mode != "none":
        shifts = ", ".join(f"rank {r}: {s:+.0f} us" for r, s in sorted(alignment.shifts_us.items()))
        notes.append(f"timeline clocks aligned ({alignment.reason}): {shifts}")
    traced = frozenset().union(*(p.traced_steps for p in parts))
    retraced = frozenset().union(*(p.retraced_steps for p in parts))
    report = sr.analyze(rows, sorted(p.rank for p in found), hosts=hosts, notes=notes, settings=settings,
                        left_out={sr.TASK_TRACED: traced, sr.RETRACED: retraced})
    report.verdict = sr.render_text(report)
    analysis = ClusterAnalysis(root=root, ranks=parts, empty_ranks=empty, rows=rows, report=report, alignment=alignment,
                               engine=engine.where, traced_steps=traced, retraced_steps=retraced, notes=notes)
    if options.check_layouts:
        stale = [(p.rank, p.prof_dir, p.device_dir) for p in parts if p.layout_stale]
        analysis.file_notes = fill_layouts(engine, stale, all_layouts)
    return analysis


def write_cluster_analysis(root: Path | str, output_dir: Path | str | None = None, settings: sr.Settings = sr.Settings(),
                           align: str = ctl.ALIGN_AUTO, with_tasks: bool = True, scheduler: Optional[str] = None,
                           timeline: str = tfo.TIMELINE_AUTO, layouts: bool = False) -> ClusterAnalysis:
    """Analyse ``root`` and write the files into ``output_dir`` (default ``root/npu_tf_prof_cluster``).

    ``timeline``: which ranks the merged timeline draws (``timeline_focus``); ``layouts``: write the
    msprof-analyze folder of every rank lacking one, however many (``rank_layouts``)."""
    root = Path(root)
    out = Path(output_dir) if output_dir is not None else root / CLUSTER_OUTPUT_DIR
    folders = [(str(p), str(d)) for p, d in rank_folders(root)]
    every_rank = tfo.draws_every_rank(timeline, len(folders))
    # Each rank's events are written by its own task when it will be drawn on its own clock; else the timeline task reads it.
    fragments = out / tlf.FRAGMENTS_DIR if every_rank and not _shift_expected(folders, align) else None
    with open_engine(scheduler) as engine:
        options = TaskOptions(check_layouts=True, fragments=str(fragments) if fragments else None, with_tasks=with_tasks)
        try:
            analysis = _analyze(root, folders, engine, settings, align, options, all_layouts=layouts)
            csv_paths = write_csv(out, analysis.ranks)
            refs = [tlf.RankRef(p.rank, p.host, p.count, p.prof_dir, p.device_dir) for p in analysis.ranks]
            for p in analysis.ranks:
                p.csv = b""
            if not every_rank:
                focus = tfo.focus_ranks(analysis.report, analysis.rows)
                refs = [r for r in refs if r.rank in focus.reasons]
                analysis.file_notes.append(focus.note(len(analysis.ranks)))
            groups = tlf.plan_files(out, refs)
            _remove_old_timelines(out, groups)
            written = engine.map(tlf.write_group, groups, str(root), analysis.alignment, with_tasks, options.fragments)
        finally:  # the fragments are temporary, whatever happened
            if fragments is not None:
                shutil.rmtree(fragments, ignore_errors=True)
    timeline_notes = [note for p in analysis.ranks for note in p.timeline_notes] + [note for _, notes in written for note in notes]
    anomalies = cluster_anomalies(folders, analysis.rows)  # each rank's anomaly_capture anomalies, and whose own time grew
    timeline_notes += anomaly_notes(anomalies)
    if timeline_notes:
        analysis.report.notes.extend(timeline_notes)
        analysis.report.verdict = sr.render_text(analysis.report)
    paths = [*csv_paths, out / sr.JSON_NAME, out / sr.TEXT_NAME]
    if anomalies["groups"]:
        atomic_write_text(out / ANOMALIES_JSON, json.dumps(anomalies, indent=2) + "\n")
        paths.append(out / ANOMALIES_JSON)
    atomic_write_text(out / sr.JSON_NAME, analysis.report.to_json())
    atomic_write_text(out / sr.TEXT_NAME, analysis.report.verdict)
    analysis.output_dir = out
    analysis.paths = paths + [Path(path) for path, _ in written]
    return analysis


def _shift_expected(folders: list[tuple[str, str]], align: str) -> bool:
    """Whether the timeline will shift clocks (``timeline.align_points``' rule), from the ranks' info.json hosts."""
    if align == ctl.ALIGN_NONE:
        return False
    if align == ctl.ALIGN_REDUCE:
        return True
    hosts = {raw_mod.read_info(device_dir).host for _, device_dir in folders}
    return len(hosts - {None}) > 1


def _remove_old_timelines(out: Path, groups: list[tlf.TimelineGroup]) -> None:
    """A previous run's timeline files that this run does not rewrite (another grouping), so none is left stale."""
    keep = {Path(g.path) for g in groups}
    old = [out / ctl.JSON_NAME] + (sorted((out / tlf.FOLDER_NAME).glob("*_ranks_*.json")) if (out / tlf.FOLDER_NAME).is_dir() else [])
    for path in old:
        if path not in keep:
            own_files.remove(path)
