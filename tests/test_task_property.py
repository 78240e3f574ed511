"""Property test of the task reports on random op layouts (overlaps, zero durations, idle gaps):
row counts, Task Wait against an independent re-computation, timeline validity, alignment."""
from __future__ import annotations

import csv
import json
import tempfile
from collections import defaultdict
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from npu_tf_profiling.raw_format import layout
from npu_tf_profiling.reports.step import records as raw_mod
from npu_tf_profiling.reports.encoders.chrome_trace import validate_chrome_trace
from npu_tf_profiling.testing.task_synthetic import PROF_TS, SynthOp, write_synthetic_prof_dir
from npu_tf_profiling.reports.task.table import load_device_tasks, task_windows
from npu_tf_profiling.reports.writer import write_all_reports

_op = st.tuples(st.integers(0, 50_000), st.integers(0, 20_000), st.integers(0, 2), st.sampled_from(["MatMul", "Relu", "NcclAllReduce"]))


def _us_to_ns(text: str) -> int:
    whole, frac = text.split(".")
    return int(whole) * 1000 + int(frac)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ops=st.lists(_op, min_size=1, max_size=25), n_iterations=st.integers(1, 4), data=st.data())
def test_random_layouts(ops, n_iterations, data):
    traced = data.draw(st.sets(st.integers(1, n_iterations), min_size=1))
    plan = [SynthOp(f"op_{i}", t, off, dur, thread) for i, (off, dur, thread, t) in enumerate(ops)]
    with tempfile.TemporaryDirectory() as tmp:
        run = write_synthetic_prof_dir(Path(tmp), n_iterations, plan, traced=traced)
        paths = write_all_reports(run.prof_dir)
        out = layout.report_dir(run.prof_dir)
        with open(out / f"task_time_{PROF_TS}.csv", newline="") as handle:
            rows = list(csv.DictReader(handle))
        assert len(rows) == len(plan) * len(traced)
        assert {int(r["Iteration ID"]) for r in rows} == traced

        # Task Wait: start minus the latest end of the earlier-starting tasks of the same thread and iteration.
        groups = defaultdict(list)
        for r in rows:
            start = _us_to_ns(r["Task Start(us)"])
            groups[(r["Iteration ID"], r["Stream ID"])].append((start, start + _us_to_ns(r["Task Duration(us)"]), _us_to_ns(r["Task Wait(us)"])))
        for items in groups.values():
            latest = None
            for start, end, wait in sorted(items, key=lambda x: x[0]):
                assert wait == (0 if latest is None else max(0, start - latest))
                latest = end if latest is None else max(latest, end)

        with open(out / f"op_summary_{PROF_TS}.csv", newline="") as handle:
            assert sum(int(r["Count"]) for r in csv.DictReader(handle)) == len(rows)
        (timeline,) = [p for p in paths if p.name.startswith("msprof_")]
        events = json.loads(timeline.read_text())
        assert validate_chrome_trace(events) == []
        assert sum(1 for e in events if e.get("cat") == "Task") == len(rows)
        comm = [r for r in rows if r["Op Type"] == "NcclAllReduce"]
        assert all(r["Task Type"] == "communication" for r in comm)

        device = raw_mod.read_device(layout.device_dir(run.prof_dir, 0))
        assert task_windows(load_device_tasks(device.device_dir, 0, device.info, device.trace))["inside"].all()
