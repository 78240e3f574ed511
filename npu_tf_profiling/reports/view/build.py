"""What ``npu-tf-prof view PATH`` draws, and where the page goes.

PATH is what `run_input.find_input` reads: a PROF_* folder, an output folder of them, or a cluster
(one PROF_* per rank, also spread over per-host sub-folders, as
``npu-tf-prof cluster`` finds them). The page has a cluster part when the
folders hold two ranks or more, then one part per PROF folder (the first
``MAX_DETAILED``; a note names the rest). Only raw data is read, through the
reports' own readers, and only the page is written: one file, replaced whole
(``raw_format.atomic``), by default ``view.html`` beside the reports:
``PROF_*/mindstudio_profiler_output/`` for one PROF folder,
``OUTPUT/npu_tf_prof_cluster/`` for several.
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import Optional

from npu_tf_profiling.raw_format import layout
from npu_tf_profiling.raw_format.atomic import atomic_write_text
from npu_tf_profiling.reports.cluster.data import CLUSTER_OUTPUT_DIR
from npu_tf_profiling.reports.run_input import MAX_DETAILED, RunInput, find_input, task_tables
from npu_tf_profiling.reports.view.cluster_section import add_cluster
from npu_tf_profiling.reports.view.compare_section import add_compare
from npu_tf_profiling.reports.view.model_section import add_prof_dir
from npu_tf_profiling.reports.view.page import Page, plotly_modules

VIEW_NAME = "view.html"
COMPARE_NAME = "view_compare.html"


def build_page(found: RunInput, compare: Optional[str] = None) -> Page:
    """The page of ``found``, first compared with the run at ``compare`` when given (raises ``MissingDependencyError``
    without plotly)."""
    plotly_modules()  # fail before reading tasks, with the install line
    page = Page(title=f"npu-tf-prof view: {found.root.resolve().name or found.root}")
    page.paragraph(f"{found.root.resolve()} · {time.strftime('%Y-%m-%d %H:%M:%S')} · all times in µs, "
                   "as in step_trace_*.csv (docs/output_format.md)")
    for note in found.notes:
        page.paragraph(note, "note")
    if compare is not None:
        add_compare(page, found, compare)
    if found.cluster is not None:
        add_cluster(page, found.cluster)
    detailed = found.loaded[:MAX_DETAILED]
    rest = [d.prof_dir for d in found.loaded[MAX_DETAILED:]] + found.not_read
    if rest:
        names = ", ".join(p.name for p in rest[:MAX_DETAILED]) + (f" and {len(rest) - MAX_DETAILED} more" if len(rest) > MAX_DETAILED else "")
        page.paragraph(f"{len(detailed) + len(rest)} PROF folders: {len(detailed)} are drawn below; run "
                       f"npu-tf-prof view on any of the others for its page ({names})", "note")
    for data in detailed:
        add_prof_dir(page, data, task_tables(data))
    return page


def write_view(path: Path | str, output: Path | str | None = None, compare: Optional[str] = None) -> Path:
    """Build the page of ``path`` (compared with ``compare``) and write it (default: ``default_output``,
    named ``COMPARE_NAME`` for a comparison, so the run's own page stays); returns where."""
    found = find_input(path, drawn_only=compare is None)  # a comparison reads every rank of both sides
    page = build_page(found, compare)
    target = Path(output) if output is not None else default_output(found)
    if output is None and compare is not None:
        target = target.with_name(COMPARE_NAME)
    atomic_write_text(target, page.to_html())
    return target


def default_output(found: RunInput) -> Path:
    """``view.html`` beside the reports: in the PROF folder's report folder, or the cluster's for several."""
    if len(found.prof_dirs) == 1:
        return layout.report_dir(found.prof_dirs[0]) / VIEW_NAME
    return found.root / CLUSTER_OUTPUT_DIR / VIEW_NAME
