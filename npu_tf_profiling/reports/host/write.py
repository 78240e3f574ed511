"""Write the host reports of one PROF folder (``reports.writer`` calls this after the step trace).

Into ``mindstudio_profiler_output/``: CANN's host usage CSVs (``usage``), ``step_memory_<ts>.csv`` with
``profile_memory``, ``mstx_summary_<ts>.csv`` for ranges that repeat each iteration; notes naming the
iterations whose memory peak stands out and the repeating ranges; and the counters and markers as events for
the host timeline (``timeline``, written by ``trace_file`` with with_stack's tracks).
Host data is per process, so with several device folders each gets its own rows (Device_id).
"""
from __future__ import annotations

from pathlib import Path
from typing import Optional

from npu_tf_profiling.reports.encoders.chrome_trace import Event

from npu_tf_profiling.raw_format import layout
from npu_tf_profiling.raw_format.atomic import atomic_write_text
from npu_tf_profiling.reports.host import iterations
from npu_tf_profiling.reports.host.notes import memory_notes, range_notes
from npu_tf_profiling.raw_format.mstx_markers import read_markers
from npu_tf_profiling.reports.host.raw import read_host_samples
from npu_tf_profiling.reports.host.timeline import usage_events
from npu_tf_profiling.reports.host.usage import write_usage_csvs
from npu_tf_profiling.reports.step import table as st


def write_host_reports(prof_dir: Path, ts: str, table: Optional[st.StepTraceTable],
                       notes: list[str]) -> tuple[list[Path], list[Event]]:
    """The files written, and the host timeline's counter and marker events."""
    out_dir = layout.report_dir(prof_dir)
    written: list[Path] = []
    events: list[Event] = []
    peaks: list[iterations.MemoryPeaks] = []
    ranges = []
    for device_dir in layout.device_dirs(prof_dir):
        device_id = int(device_dir.name[len(layout.DEVICE_DIR_PREFIX):])
        samples, markers = read_host_samples(device_dir), read_markers(device_dir)
        if samples is None and not markers:
            continue
        events += usage_events(device_id, samples, markers)
        out_dir.mkdir(parents=True, exist_ok=True)
        if samples is not None:
            written += write_usage_csvs(samples, out_dir, ts if len(layout.device_dirs(prof_dir)) == 1 else f"{ts}_{device_id}")
        spans = iterations.iteration_spans(table, device_id) if table is not None else None
        if spans is None:
            continue
        found = iterations.memory_peaks(samples, spans, device_id) if samples is not None else None
        if found is not None:
            peaks.append(found)
        if markers:
            repeating = iterations.repeating_ranges(markers, spans)
            repeating.insert(0, "Device_id", device_id)
            ranges.append(repeating)
    if peaks:
        written.append(iterations.write_memory_csv(out_dir / f"step_memory_{ts}.csv", peaks))
        notes.extend(note for each in peaks for note in memory_notes(each))
    if ranges:
        import pandas as pd

        summary = pd.concat(ranges, ignore_index=True)
        path = out_dir / f"mstx_summary_{ts}.csv"
        atomic_write_text(path, summary.to_csv(index=False))
        written.append(path)
        notes.extend(range_notes(summary))
    return written, events

