"""The msprof-analyze folders of ranks that lack one, filled in by ``npu-tf-prof cluster`` as Dask tasks.

A worker that was killed never wrote its reports, so msprof-analyze (which
reads every rank's ``*_ascend_pt`` folder) would miss its rank. The per-rank
task notes whether a rank's folder is missing or older than its raw data
(``RankPart.layout_stale``); this module then writes those folders, the same
files as ``npu-tf-prof report`` writes:

* automatically when at most ``AUTO_FILL_MAX`` ranks need one: what killed
  workers leave behind;
* for every such rank with ``--layouts``.

Past ``AUTO_FILL_MAX`` (a cluster whose workers wrote no reports, or raw data
copied without them) the command only says which ranks lack a folder: a
folder costs about 0.2 s of CPU a rank of 1,000 steps on a 2-core machine (0.5 s
before its text files were written from columns), about a third each in the text
copies (``trace_view.json``, ``communication.json``), the two databases and the rest,
and 1,024 of them would keep the verdict waiting for minutes (``benchmarks/RESULTS.md``).
A failure costs only that rank's folder, never the analysis.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Sequence

from npu_tf_profiling.reports.cluster.engine import Engine, batches
from npu_tf_profiling.reports.step import records as raw_mod
from npu_tf_profiling.reports.step import table as st

AUTO_FILL_MAX = 16
LAYOUTS_FLAG = "--layouts"


@dataclass(frozen=True)
class LayoutResult:
    rank: int
    written: bool = False
    note: Optional[str] = None  # a long rank's folder holds only the databases (``msprof.writer.is_long``)
    error: Optional[str] = None


def fill_layouts(engine: Engine, stale: Sequence[tuple[int, str, str]], force: bool) -> list[str]:
    """Write the folders of ``stale`` ranks ((rank, prof_dir, device_dir)) as the module docstring says; the notes."""
    if not stale:
        return []
    ranks = [rank for rank, _, _ in stale]
    if len(stale) > AUTO_FILL_MAX and not force:
        return [f"{len(stale)} rank(s) have no msprof-analyze folder, or one older than their raw data ({ranks_text(ranks)}): "
                f"not written (over {AUTO_FILL_MAX}, it would cost about 0.2 s a rank of 1,000 steps); "
                f"'npu-tf-prof cluster {LAYOUTS_FLAG}' writes them, or 'npu-tf-prof report PROF_DIR' one PROF folder's"]
    results = [r for batch in engine.map(write_batch, batches(list(stale), workers=engine.workers)) for r in batch]
    return layout_notes(results)


def write_batch(stale: list[tuple[int, str, str]]) -> list[LayoutResult]:
    """The task: ``write_layout`` of each rank of a batch."""
    return [write_layout(rank, prof_dir, device_dir) for rank, prof_dir, device_dir in stale]


def write_layout(rank: int, prof_dir: str, device_dir: str) -> LayoutResult:
    """One rank's msprof-analyze folder, from its raw data. Never fails the analysis: an error becomes a note."""
    from npu_tf_profiling.reports.msprof import names
    from npu_tf_profiling.reports.msprof.rank_model import build_rank_model
    from npu_tf_profiling.reports.msprof.writer import is_long, long_rank_note, write_rank_folder
    from npu_tf_profiling.reports.task.table import load_device_tasks

    try:
        device = raw_mod.read_device(device_dir)
        frame = device.trace.frame if device.trace is not None else None
        if frame is None or frame.empty:
            return LayoutResult(rank)
        table = st.compute_step_trace(frame, rank, st.max_reduce_groups(frame))
        tasks = load_device_tasks(device.device_dir, rank, device.info, device.trace)
        model = build_rank_model(rank, Path(prof_dir), device.info, table, tasks)
        folder = names.rank_folder(Path(prof_dir), model.host, model.rank)
        write_rank_folder(model, folder)
        return LayoutResult(rank, written=True, note=long_rank_note(model, folder) if is_long(model) else None)
    except Exception as exc:  # noqa: BLE001 - the extra layout never costs the user the analysis
        return LayoutResult(rank, error=repr(exc))


def layout_notes(results: list[LayoutResult]) -> list[str]:
    written = sorted(r.rank for r in results if r.written)
    failed = [f"rank {r.rank}: {r.error}" for r in sorted(results, key=lambda r: r.rank) if r.error]
    notes = []
    if written:
        notes.append(f"msprof-analyze layout written for rank(s) {ranks_text(written)} (missing or older than their raw data)")
    long_notes = [r.note for r in results if r.note]
    notes.extend(long_notes[:5])
    if len(long_notes) > 5:
        notes.append(f"{len(long_notes) - 5} more long rank(s) got only the databases msprof-analyze reads")
    if failed:
        notes.append(f"msprof-analyze layout not written for {len(failed)} rank(s): " + "; ".join(failed[:5]) + ("; ..." if len(failed) > 5 else ""))
    return notes


def ranks_text(ranks: list[int]) -> str:
    """A few ranks one by one, many as ranges (``0-1023``)."""
    from npu_tf_profiling.reports.cluster.slow_rank.missing import step_ranges

    return ", ".join(map(str, ranks)) if len(ranks) <= 16 else step_ranges(sorted(ranks))
