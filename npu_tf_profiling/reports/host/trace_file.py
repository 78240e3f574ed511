"""``host_trace_<ts>.json``: the one host timeline (Chrome trace format: Perfetto, chrome://tracing).

Everything the host switches recorded, on the step trace's clock and in each device's process
(``Device <id>``, as in ``step_trace_<ts>.json``): the step trace's own tracks, so the host's work
lines up with the iterations, then with_stack's and the GC pauses' tracks (``stack_files``), the host
usage counters and the mstx markers (``timeline``). A file of its own, not a part of the step-trace
timeline: that one is sliced by rows for million-iteration runs, and these events are not rows; so the
step trace's tracks are copied here only up to ``STEP_EVENTS_AT_MOST`` iterations.
"""
from __future__ import annotations

from pathlib import Path
from typing import Optional

from npu_tf_profiling.raw_format.atomic import atomic_write_text
from npu_tf_profiling.reports.encoders import chrome_trace
from npu_tf_profiling.reports.step import table as st
from npu_tf_profiling.reports.step.timeline import step_trace_events

STEP_EVENTS_AT_MOST = 100_000  # iterations; a longer run's host trace holds the host tracks only


def write_host_trace(out_dir: Path, timestamp: str, table: Optional[st.StepTraceTable],
                     host_events: list[chrome_trace.Event]) -> Optional[Path]:
    """Write the host timeline when the host switches gave it events; None when they gave none."""
    if not host_events:
        return None
    steps = step_trace_events(table) if table is not None and 0 < len(table) <= STEP_EVENTS_AT_MOST else []
    named = {e["pid"] for e in steps if e.get("name") == "process_name"}
    processes = [chrome_trace.process_name_event(pid, f"Device {pid}") for pid in sorted({e["pid"] for e in host_events} - named)]
    path = Path(out_dir) / f"host_trace_{timestamp}.json"
    atomic_write_text(path, chrome_trace.dumps_events(steps + processes + host_events))
    return path
