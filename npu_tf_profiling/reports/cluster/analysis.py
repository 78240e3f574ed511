"""The cluster analysis end to end: find the ranks, compute, write ``npu_tf_prof_cluster/``.

    OUTPUT_DIR/npu_tf_prof_cluster/
        cluster_step_trace_time.csv   per (step, rank) time breakdown (sliced by steps past 200 MiB: ``csv_files``)
        slow_rank.json                slow ranks, causes, the votes, missing steps, communication shares
        slow_rank.txt                 the same as a text verdict (also printed by the command)
        cluster_timeline.json         every rank on one clock (Chrome trace / Perfetto); for a large
                                      cluster, cluster_timeline/<host>_ranks_<a>-<b>.json (``timeline_files``)

Three steps, all on Dask (``engine``): per-rank tasks (``rank_task``: read,
step formulas, CSV lines, the rank's msprof-analyze folder) return compact
columns; the cross-rank work (the CSV's merge, the slow-rank tests, clock
alignment) runs here on those columns only; one task per timeline file
writes it. Each file is written whole through a temporary name
(``raw_format.atomic``), so re-running replaces the previous analysis in one
step. Never imports TensorFlow.
"""
from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import pandas as pd

from npu_tf_profiling.raw_format import own_files
from npu_tf_profiling.raw_format.atomic import atomic_write_text
from npu_tf_profiling.reports.cluster import step_table as cst
from npu_tf_profiling.reports.cluster import timeline as ctl
from npu_tf_profiling.reports.cluster import timeline_files as tlf
from npu_tf_profiling.reports.cluster import slow_rank as sr
from npu_tf_profiling.reports.cluster.data import (
    CLUSTER_OUTPUT_DIR, ClusterData, RankFound, RankSet, check_one_folder_per_rank, load_cluster, rank_folders, rank_notes,
)
from npu_tf_profiling.reports.cluster.csv_files import write_csv
from npu_tf_profiling.reports.cluster.engine import Engine, batches, open_engine
from npu_tf_profiling.reports.cluster.rank_task import SYNC_END, SYNC_REDUCE, RankPart, TaskOptions, rank_batch
from npu_tf_profiling.reports.step import records as raw_mod


@dataclass
class ClusterAnalysis(RankSet):
    root: Path
    ranks: list[RankPart]  # ranks with iteration records, by rank (their ``rows`` moved into ``rows``)
    empty_ranks: list[RankPart]  # rank folders without any record
    rows: pd.DataFrame  # per (model, step, rank): Model ID, Step, Index and ANALYSIS_COLUMNS
    report: sr.SlowRankReport
    alignment: ctl.ClockAlignment
    engine: str = ""  # where the tasks ran
    traced_steps: frozenset[tuple[int, int]] = frozenset()
    output_dir: Optional[Path] = None
    paths: list[Path] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    layout_notes: list[str] = field(default_factory=list)  # the msprof-analyze folders written for missing ranks

    def load_data(self) -> ClusterData:
        """Every rank's step table in this process (the view's per-phase medians); not used by the analysis."""
        return load_cluster(self.root)


def analyze_cluster(root: Path | str, settings: sr.Settings = sr.Settings(), align: str = ctl.ALIGN_AUTO,
                    scheduler: Optional[str] = None, write_layouts: bool = False) -> ClusterAnalysis:
    """Run the per-rank tasks and the cross-rank analyzers on ``scheduler`` (None: in this process); writes nothing
    of ours (``write_layouts``: the per-rank tasks write missing msprof-analyze folders)."""
    with open_engine(scheduler) as engine:
        folders = [(str(p), str(d)) for p, d in rank_folders(root)]
        return _analyze(Path(root), folders, engine, settings, align, TaskOptions(write_layouts=write_layouts))


def _analyze(root: Path, folders: list[tuple[str, str]], engine: Engine, settings: sr.Settings, align: str,
             options: TaskOptions) -> ClusterAnalysis:
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
    report = sr.analyze(rows, sorted(p.rank for p in found), hosts=hosts, notes=notes, settings=settings, left_out=traced)
    analysis = ClusterAnalysis(root=root, ranks=parts, empty_ranks=empty, rows=rows, report=report, alignment=alignment,
                               engine=engine.where, traced_steps=traced, notes=notes)
    analysis.layout_notes = _layout_notes(found)
    return analysis


def write_cluster_analysis(root: Path | str, output_dir: Path | str | None = None, settings: sr.Settings = sr.Settings(),
                           align: str = ctl.ALIGN_AUTO, with_tasks: bool = True, scheduler: Optional[str] = None) -> ClusterAnalysis:
    """Analyse ``root`` and write the files into ``output_dir`` (default ``root/npu_tf_prof_cluster``)."""
    root = Path(root)
    out = Path(output_dir) if output_dir is not None else root / CLUSTER_OUTPUT_DIR
    folders = [(str(p), str(d)) for p, d in rank_folders(root)]
    fragments = out / tlf.FRAGMENTS_DIR if not _shift_expected(folders, align) else None
    with open_engine(scheduler) as engine:
        options = TaskOptions(write_layouts=True, fragments=str(fragments) if fragments else None, with_tasks=with_tasks)
        try:
            analysis = _analyze(root, folders, engine, settings, align, options)
            csv_paths = write_csv(out, analysis.ranks)
            refs = [tlf.RankRef(p.rank, p.host, p.count, p.prof_dir, p.device_dir) for p in analysis.ranks]
            for p in analysis.ranks:
                p.csv = b""
            groups = tlf.plan_files(out, refs)
            _remove_old_timelines(out, groups)
            written = engine.map(tlf.write_group, groups, str(root), analysis.alignment, with_tasks, options.fragments)
        finally:  # the fragments are temporary, whatever happened
            if fragments is not None:
                shutil.rmtree(fragments, ignore_errors=True)
    timeline_notes = [note for p in analysis.ranks for note in p.timeline_notes] + [note for _, notes in written for note in notes]
    if timeline_notes:
        analysis.report.notes.extend(timeline_notes)
        analysis.report.verdict = sr.render_text(analysis.report)
    paths = [*csv_paths, out / sr.JSON_NAME, out / sr.TEXT_NAME]
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
    hosts = {raw_mod.read_info(device_dir).get("host") for _, device_dir in folders}
    return len({h for h in hosts if isinstance(h, str)}) > 1


def _remove_old_timelines(out: Path, groups: list[tlf.TimelineGroup]) -> None:
    """A previous run's timeline files that this run does not rewrite (another grouping), so none is left stale."""
    keep = {Path(g.path) for g in groups}
    old = [out / ctl.JSON_NAME] + (sorted((out / tlf.FOLDER_NAME).glob("*_ranks_*.json")) if (out / tlf.FOLDER_NAME).is_dir() else [])
    for path in old:
        if path not in keep:
            own_files.remove(path)


def _layout_notes(parts: list[RankPart]) -> list[str]:
    written = [p.rank for p in parts if p.layout_written]
    failed = [f"rank {p.rank}: {p.layout_error}" for p in parts if p.layout_error]
    notes = []
    if written:
        notes.append(f"msprof-analyze layout written for rank(s) {_ranks_text(written)} (missing or older than their raw data)")
    long_notes = [p.layout_note for p in parts if p.layout_note]
    notes.extend(long_notes[:5])
    if len(long_notes) > 5:
        notes.append(f"{len(long_notes) - 5} more long rank(s) got only the databases msprof-analyze reads")
    if failed:
        notes.append(f"msprof-analyze layout not written for {len(failed)} rank(s): " + "; ".join(failed[:5]) + ("; ..." if len(failed) > 5 else ""))
    return notes


def _ranks_text(ranks: list[int]) -> str:
    """A few ranks one by one, many as ranges (``0-1023``)."""
    from npu_tf_profiling.reports.cluster.slow_rank.missing import step_ranges

    return ", ".join(map(str, ranks)) if len(ranks) <= 16 else step_ranges(sorted(ranks))
