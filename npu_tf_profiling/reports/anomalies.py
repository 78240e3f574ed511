"""What each anomaly_capture capture says: read ``anomalies.jsonl``, and the ops that changed against the reference.

The runtime (`runtime.anomaly_watch`) writes one line per capture: the reference
(normal iterations, taken early) and each anomaly (its first and last slow
iteration, its factor against the baseline, the iterations whose tasks were
traced, and whether they were still slow). The tasks of those iterations are in
the folder's task records like any task_trace iteration, so "what changed" is
read from the task table: per op (name and type), its time per iteration in the
anomaly's captured iterations that were still slow (all of them for a spike) against the reference's. An op the reference did
not run, or ran CHANGED_RATIO times shorter, is named, largest added time first,
when its added time is at least CHANGED_FLOOR_US and CHANGED_SHARE of the
slowdown (the captured iterations' mean time over the reference's): smaller
differences are the noise of kernels that ran in both.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Optional

import pandas as pd

from npu_tf_profiling.raw_format import layout
from npu_tf_profiling.reports.prof_dir import ProfData

KEY = "anomalies"
DROPPED_KEY = "dropped_in_case"  # traces the training thread's look armed, dropped by the row's verdict (runtime.anomaly_watch)
DROPPED_SHOWN = 5
CHANGED_RATIO = 2.0  # an op at least this many times longer per iteration than in the reference has changed
CHANGED_FLOOR_US = 20.0  # nor less than this added per iteration: below it, a kernel's time is timer noise
CHANGED_SHARE = 0.005  # nor less than this share of the slowdown
CHANGED_SHOWN = 10
ADVICE_SHOWN = 3


def read_anomaly_lines(device_dir: Path) -> list[dict[str, Any]]:
    """The device folder's capture lines, in order; a torn last line (the job killed mid-write) is skipped."""
    path = Path(device_dir) / layout.DATA_DIR / layout.ANOMALIES_FILE
    if not path.is_file():
        return []
    lines = []
    for text in path.read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            line = json.loads(text)
        except json.JSONDecodeError:
            continue
        if isinstance(line, dict):
            lines.append(line)
    return lines


def _per_iteration_us(tasks: Any, model_id: int, iterations: list[int]) -> pd.DataFrame:
    """Per op (name, type): its time per captured iteration, µs (ops absent: not listed)."""
    frame = tasks.frame
    rows = frame[(frame["model_id"] == model_id) & frame["iteration_id"].isin(iterations)]
    present = rows["iteration_id"].nunique()
    if not present:
        return pd.DataFrame(columns=["name", "op_type", "us"])
    by_op = (rows["end_ns"] - rows["start_ns"]).groupby([rows["name"], rows["op_type"]]).sum() / 1e3 / present
    out = by_op.reset_index(name="us")
    out["name"] = [tasks.names[int(c)] for c in out["name"]]
    out["op_type"] = [tasks.op_types[int(c)] for c in out["op_type"]]
    return out


def what_changed(tasks: Any, model_id: int, captured: list[int], reference: list[int], slowdown_us: float = 0.0) -> list[dict[str, Any]]:
    """The ops the captured iterations ran and the reference did not, or ran much longer (module docstring)."""
    floor = max(CHANGED_FLOOR_US, CHANGED_SHARE * slowdown_us)
    now = _per_iteration_us(tasks, model_id, captured)
    before = _per_iteration_us(tasks, model_id, reference).set_index(["name", "op_type"])["us"]
    changed = []
    for name, op_type, us in now.itertuples(index=False):
        was = float(before.get((name, op_type), 0.0))
        if us - was >= floor and us >= CHANGED_RATIO * was:
            changed.append({"name": name, "op_type": op_type, "us_per_iteration": round(us, 1),
                            "reference_us_per_iteration": round(was, 1), "new": was == 0.0})
    changed.sort(key=lambda c: c["reference_us_per_iteration"] - c["us_per_iteration"])
    return changed[:CHANGED_SHOWN]


def anomalies_of(data: ProfData) -> list[dict[str, Any]]:
    """Every device's anomalies, with `device_id`, and `changed` where both it and a reference were captured."""
    from npu_tf_profiling.reports.task.files import device_task_table  # the task table only when there are captures

    out = []
    for device in data.devices:
        lines = read_anomaly_lines(device.device_dir)
        anomalies = [line for line in lines if line.get("kind") == "anomaly"]
        if not anomalies:
            continue
        references = {line.get("model_id"): line for line in lines if line.get("kind") == "reference"}
        tasks = device_task_table(device, data.table) if any(a.get("captured") for a in anomalies) else None
        for anomaly in anomalies:
            entry = dict(anomaly, device_id=device.device_id)
            reference = references.get(anomaly.get("model_id")) or {}
            if tasks is not None and anomaly.get("captured") and reference.get("captured"):
                iterations, times = slow_part(anomaly)
                slowdown = _mean(times) - _mean(reference.get("captured_us"))
                entry["changed"] = what_changed(tasks, int(anomaly["model_id"]), iterations, reference["captured"], slowdown)
            out.append(entry)
    return out


def dropped_traces_of(data: ProfData) -> list[dict[str, Any]]:
    """Every device's traces armed by the training thread's look and dropped, with `device_id` (their tasks are in the
    task files, so the summary says why they were traced)."""
    return [dict(line, device_id=device.device_id) for device in data.devices
            for line in read_anomaly_lines(device.device_dir) if line.get("kind") == DROPPED_KEY]


def render_dropped(entries: list[dict[str, Any]]) -> list[str]:
    """One line for them all, naming the first DROPPED_SHOWN."""
    if not entries:
        return []
    named = "; ".join(f"iteration {e.get('iteration')} took {e.get('interval_us')} us between call starts, "
                      f"traced {', '.join(map(str, e.get('traced_in_case') or [])) or 'nothing'}: {e.get('why')}"
                      for e in entries[:DROPPED_SHOWN])
    more = f"; and {len(entries) - DROPPED_SHOWN} more" if len(entries) > DROPPED_SHOWN else ""
    return [f"anomaly_capture traced {len(entries)} time(s) in case at a slow call's start, then dropped: {named}{more}"]


def slow_part(anomaly: dict[str, Any]) -> tuple[list[int], list[float]]:
    """The captured iterations that were still slow, and their times; all of them for a spike (none was).

    A capture can outlast its slow stretch (it starts an iteration or two after the first slow one, and a
    confirmed one a step later): its steady iterations ran what the reference ran, and would dilute the
    ops that made the slow ones slow.
    """
    captured, times = list(anomaly.get("captured") or []), list(anomaly.get("captured_us") or [])
    still = set(anomaly.get("still_slow") or [])
    if not still or len(times) != len(captured):
        return captured, times
    kept = [(i, t) for i, t in zip(captured, times) if i in still]
    return [i for i, _ in kept], [t for _, t in kept]


def _mean(values: Any) -> float:
    numbers = [v for v in values or [] if isinstance(v, (int, float))]
    return sum(numbers) / len(numbers) if numbers else 0.0


def render_anomaly(entry: dict[str, Any]) -> list[str]:
    """An anomaly's lines in the summary's text."""
    first, last = entry.get("first_slow"), entry.get("last_slow")
    span = f"iteration {first}" if first == last else f"iterations {first}..{last}"
    lines = [f"Anomaly, Model ID {entry.get('model_id')}: {span} slow, up to {entry.get('factor')}x "
             f"the baseline {entry.get('baseline_us')} us"]
    captured: Optional[list] = entry.get("captured")
    if entry.get("not_captured"):
        lines.append(f"  not captured: {entry['not_captured']}")
        if entry.get("traced_in_case"):
            lines.append(f"  traced in case it went on, then dropped: iterations {', '.join(map(str, entry['traced_in_case']))}")
    elif captured:
        verdict = ("still slow: " + ", ".join(map(str, entry.get("still_slow") or [])) if entry.get("persisted")
                   else "all normal: the slowdown did not persist (a lone spike)")
        lines.append(f"  task_trace of iterations {', '.join(map(str, captured))}: {verdict}")
    for op in entry.get("changed") or []:
        was = "not run in the reference" if op["new"] else f"{op['reference_us_per_iteration']} us in the reference"
        lines.append(f"  changed: {op['name']} ({op['op_type']}) {op['us_per_iteration']} us per iteration, {was}")
    for finding in (entry.get("advice") or [])[:ADVICE_SHOWN]:  # `advise`'s rules on the stretch (advise.engine)
        lines.append(f"  advice on these iterations: {finding['headline']}")
    return lines
