"""The files ``with_stack`` and ``gc_detect_threshold`` add to ``mindstudio_profiler_output/``.

* ``host_stacks_<ts>.folded``: collapsed stacks (``frame;frame;... count``, outermost
  first), the format Brendan Gregg's flamegraph.pl, speedscope and Perfetto read.
  The two first frames are the device and the sample's phase, so a flame graph
  splits the time between iterations from the step call at a glance.
* ``gc_pauses_<ts>.csv``: one row per GC pause, with the iteration it fell in.
* for the host timeline (``trace_file``), per device, a ``Host Python (with_stack)`` track (consecutive
  samples on one line of the script merged into one span, its stack in ``args``) and a ``GC pauses`` track.
"""
from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any, Optional

import numpy as np

from npu_tf_profiling.raw_format import layout
from npu_tf_profiling.raw_format.atomic import atomic_write_text
from npu_tf_profiling.reports.encoders import chrome_trace
from npu_tf_profiling.reports.host import stack_time
from npu_tf_profiling.reports.host.iterations import Spans, iteration_spans
from npu_tf_profiling.reports.prof_dir import ProfData
from npu_tf_profiling.reports.step import table as st
from npu_tf_profiling.reports.step.between import load_other_runs
from npu_tf_profiling.reports.step.windows import window_index

GC_COLUMNS = ["Device_id", "Model ID", "Iteration ID", "Start(us)", "Duration(us)", "Generation", "Collected",
              "Uncollectable", "Phase"]
HOST_TRACK, GC_TRACK = "Host Python (with_stack)", "GC pauses"
_HOST_TID, _GC_TID = 10_000, 10_001  # after every step-trace track of a device
GAP_SAMPLES = 2.5  # samples further apart than this many periods start a new span


def _frame_text(frame: tuple[str, int, str]) -> str:
    file, line, function = frame
    return f"{function} ({Path(file).name}:{line})".replace(";", ":")


def _device_rows(data: ProfData, device_id: int) -> Any:
    frame = data.table.frame
    return frame[frame[st.DEVICE_ID] == device_id]


def write_host_files(data: ProfData, timestamp: str) -> tuple[list[Path], list[chrome_trace.Event]]:
    """Write the host files of every device that recorded stacks or GC pauses ([] when none did); and return
    the stack and GC tracks' events for the host timeline."""
    out_dir = layout.report_dir(data.prof_dir)
    folded: Counter[str] = Counter()
    gc_lines: list[str] = []
    events: list[chrome_trace.Event] = []
    for device in data.devices:
        stacks, pauses = stack_time.load_stacks(device.device_dir, device.info), stack_time.load_gc(device.device_dir, device.info)
        if stacks is None and pauses is None:
            continue
        rows = _device_rows(data, device.device_id)
        runs = load_other_runs(device.device_dir, device.info)
        if stacks is not None and len(stacks.times_us):
            phase = stack_time.sample_phases(stacks, rows, runs)
            for stack_id, where in zip(stacks.stack_ids.tolist(), phase.tolist()):
                folded[";".join([f"device_{device.device_id}", where, *map(_frame_text, stacks.frames[stack_id])])] += 1
            events.extend(_stack_events(device.device_id, stacks, phase))
        if pauses is not None and len(pauses.starts):
            gc_lines.extend(_gc_rows(device.device_id, pauses, iteration_spans(data.table, device.device_id),
                                     stack_time.phases(pauses.starts, rows, runs)))
            events.extend(_gc_events(device.device_id, pauses))
    written = []
    if folded:
        path = out_dir / f"host_stacks_{timestamp}.folded"
        atomic_write_text(path, "".join(f"{stack} {n}\n" for stack, n in sorted(folded.items())))
        written.append(path)
    if gc_lines:
        path = out_dir / f"gc_pauses_{timestamp}.csv"
        atomic_write_text(path, ",".join(GC_COLUMNS) + "\n" + "".join(gc_lines))
        written.append(path)
    return written, _track_names(events) + events


def _gc_rows(device_id: int, pauses: Any, spans: Spans, phase: np.ndarray) -> list[str]:
    """One CSV row per pause, in the iteration it started in (previous iteration's end to its own end)."""
    index = window_index(spans.start, spans.end, pauses.starts)
    out = []
    for k in range(len(pauses.starts)):
        i = int(index[k])
        model, iteration = (spans.model[i], spans.iteration[i]) if i >= 0 else (st.NA, st.NA)
        out.append(f"{device_id},{model},{iteration},{pauses.starts[k]:.1f},{pauses.durations[k]:.1f},"
                   f"{pauses.generations[k]},{pauses.collected[k]},{pauses.uncollectable[k]},{phase[k]}\n")
    return out


def _stack_events(device_id: int, stacks: Any, phase: np.ndarray) -> list[chrome_trace.Event]:
    """Runs of consecutive samples on one line of the script (and one phase), one span each."""
    times = stacks.times_us
    if not len(times):
        return []
    period = float(np.median(np.diff(times))) if len(times) > 1 else 10_000.0
    lines = [stack_time.line_of(stacks, int(s)) for s in stacks.stack_ids]
    events: list[chrome_trace.Event] = []
    start = 0
    for k in range(1, len(times) + 1):
        if k < len(times) and lines[k] == lines[start] and phase[k] == phase[start] and times[k] - times[k - 1] <= GAP_SAMPLES * period:
            continue
        file, line, function = lines[start]
        stop = times[k - 1] + period if k == len(times) else min(times[k - 1] + period, times[k])  # never over the next span
        events.append({"name": f"{Path(file).name}:{line} {function}", "ph": "X", "pid": device_id, "tid": _HOST_TID,
                       "ts": round(float(times[start]), 1), "dur": round(round(float(stop), 1) - round(float(times[start]), 1), 1),
                       "cat": "with_stack", "args": {"phase": str(phase[start]), "samples": k - start,
                                                     "stack": [_frame_text(f) for f in stacks.frames[int(stacks.stack_ids[start])]]}})
        start = k
    return events


def _gc_events(device_id: int, pauses: Any) -> list[chrome_trace.Event]:
    return [{"name": f"GC gen {int(g)}", "ph": "X", "pid": device_id, "tid": _GC_TID, "ts": round(float(s), 1),
             "dur": round(float(d), 1), "cat": "gc", "args": {"collected": int(c), "uncollectable": int(u)}}
            for s, d, g, c, u in zip(pauses.starts, pauses.durations, pauses.generations, pauses.collected, pauses.uncollectable)]


def _track_names(events: list[chrome_trace.Event]) -> list[chrome_trace.Event]:
    names: dict[tuple[int, int], str] = {}
    for event in events:
        names[(event["pid"], event["tid"])] = HOST_TRACK if event["tid"] == _HOST_TID else GC_TRACK
    out: list[chrome_trace.Event] = []
    for (pid, tid), name in sorted(names.items()):
        out += [chrome_trace.thread_name_event(pid, tid, name), chrome_trace.thread_sort_event(pid, tid, tid)]
    return out


def host_files_note(paths: list[Path]) -> Optional[str]:
    names = ", ".join(p.name for p in paths)
    return f"host stacks / GC pauses: {names} (the .folded file opens in speedscope or flamegraph.pl)" if paths else None
