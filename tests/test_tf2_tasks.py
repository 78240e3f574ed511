"""task_trace on TensorFlow 2 steps: the window's calls captured by TensorFlow's profiler, in the Session path's task files.

Each style of tests/scripts/tf2_train.py runs with a task window (steps 3-5) through
the env vars, and unprofiled: the weights are bit-identical; task_time holds the
window's iterations only, with the Iteration IDs of step_trace; each task lies in its
own iteration (starting after the previous iteration's end and before its call's
return, and ending by that return, save an async kernel's launch: ASYNC_KERNELS);
the step's own kernels (its first layer's, its optimizer's) are there once per
iteration; and the msprof-analyze layout has the kernels.

The raw data holds tf.profiler's XSpace as it came, decoded offline without
TensorFlow (reports.task.xspace): that decoding is held against TensorFlow's own
conversion of the same bytes (its trace viewer's), kernel for kernel, and each
call gets exactly the kernels of one of TensorFlow's step groups.
"""
from __future__ import annotations

import csv
import socket
from collections import defaultdict
from pathlib import Path

import numpy as np
import pytest

from npu_tf_profiling.raw_format import layout
from npu_tf_profiling.raw_format.task_record import FramedRecord, iter_framed_records, parse_xspace_header
from npu_tf_profiling.reports.step.records import read_device
from npu_tf_profiling.reports.task import xspace

from tests.helpers.once import InBackground
from tests.test_tf2_step_trace import info_of, rows_by_model, train_with_plain
from tests.helpers.trace_files import only_prof_dir, step_trace_rows

WINDOW = (3, 5)
# The task clock is placed by the probe kernels against their stamps (reports.task.xspace): measured on 12 `loop`
# windows, the pairs agree to -1.0..+3.2 µs of the offset they give; MATCH_US (5 µs) bounds the ones it counts.
ALIGNMENT_US = xspace.MATCH_US
PAIR_SPREAD_US = 3.8  # the longest probe kernel run in those windows (its value is read inside it); pairs spread to +3.2
# An async kernel's run in the trace is its launch: TensorFlow's executor closes the kernel's trace scope when
# ComputeAsync returns, and IteratorGetNext's ComputeAsync hands the read to tf.data's background thread, whose
# done() lets the step finish. A launching thread preempted before it closes the scope ends the run after the
# call returned (seen once in CI: a 1,496 µs launch ending 810 µs after its call's return, at load).
ASYNC_KERNELS = frozenset({"IteratorGetNext"})


def task_rows(output: Path) -> list[dict[str, str]]:
    (path,) = (only_prof_dir(output) / "mindstudio_profiler_output").glob("task_time_*.csv")
    with path.open(newline="") as handle:
        return list(csv.DictReader(handle))


@pytest.mark.parametrize("style", ["loop", "fit", "for_dataset"])
def test_the_window_gets_its_tasks_in_its_own_iterations(tmp_path: Path, style: str, tf2_plain_runs: InBackground) -> None:
    options = {"output": str(tmp_path), "training_trace": "on", "task_trace": "on", "start_step": WINDOW[0], "stop_step": WINDOW[1]}
    profiled, done, plain = train_with_plain(style, tmp_path, tf2_plain_runs, options=options)
    assert profiled["weights"] == plain["weights"]
    assert "task_trace" not in " ".join(info_of(tmp_path)["notes"])  # nothing said to be missing
    # The window's end writes the reports while the job runs, quietly: the summary line is the final report's, once.
    assert done.stderr.count("traced iteration(s)") == 1, done.stderr
    _, rows = step_trace_rows(tmp_path)
    steps = rows_by_model(rows)
    tasks = task_rows(tmp_path)
    assert {t["Model ID"] for t in tasks} == set(steps)
    window = set(range(WINDOW[0], WINDOW[1] + 1))
    for model_id, model_rows in steps.items():
        mine = [t for t in tasks if t["Model ID"] == model_id]
        assert {int(t["Iteration ID"]) for t in mine} == window
        end_of = {int(r["Iteration ID"]): float(r["Iteration End(us)"]) for r in model_rows}
        returned = call_returns(tmp_path, int(model_id))
        for task in mine:  # after the previous iteration's end; ended by the time its call returned (the outputs, the ring's write come after the Iteration End stamp)
            iteration = int(task["Iteration ID"])
            start, duration = float(task["Task Start(us)"]), float(task["Task Duration(us)"])
            assert end_of[iteration - 1] - ALIGNMENT_US <= start <= returned[iteration], task
            if task["Op Type"] not in ASYNC_KERNELS:
                assert start + duration <= returned[iteration] + ALIGNMENT_US, task
        for iteration in window:  # the step's own kernels, each iteration (Keras 3: inlined under its caller's call)
            names = {t["Op Name"] for t in mine if int(t["Iteration ID"]) == iteration}
            assert any("gradient_tape/" in n for n in names) and any("Assign" in n or "Apply" in n for n in names), names
    assert_xspace_read_as_tensorflow_reads_it(only_prof_dir(tmp_path))
    assert_clock_placed_by_the_stamps(only_prof_dir(tmp_path))
    (kernels,) = tmp_path.glob("*_ascend_pt/ASCEND_PROFILER_OUTPUT/kernel_details.csv")
    with kernels.open(newline="") as handle:
        assert len(list(csv.DictReader(handle))) == len(tasks)


def assert_clock_placed_by_the_stamps(prof: Path) -> None:
    """Each window's probe kernels, on the epoch, fall on the values their stamps read (save a preempted one)."""
    frame = read_device(layout.device_dir(prof, 0)).trace.frame
    for window in iter_framed_records(layout.xspace_path(prof, 0), layout.XSPACE_MAGIC, parse_xspace_header):
        calls = [(c[layout.K_RUN_START], c[layout.K_RUN_END]) for c in window.header[layout.K_CALLS]]
        trace = xspace.host_trace(bytes(window.payload))
        marks = xspace.clock_marks(frame, (calls[0][0], calls[-1][1]))
        probes = trace.probe_starts + xspace.epoch_offset(trace, window.header[layout.K_ANCHORS], marks, calls)
        nearest = np.minimum(np.abs(marks[np.clip(np.searchsorted(marks, probes), 0, marks.size - 1)] - probes),
                             np.abs(marks[np.clip(np.searchsorted(marks, probes) - 1, 0, marks.size - 1)] - probes))
        # The median, not a share: a probe kernel preempted between its launch and its read lands late, and on a
        # loaded slow 2-core host 4 of 12 did (6-19 µs; fit, 2026-12-06), while a misplaced clock moves them all.
        assert probes.size >= 3 * len(calls) and np.median(nearest) <= PAIR_SPREAD_US, nearest


def call_returns(output: Path, model_id: int) -> dict[int, float]:
    """Iteration ID -> when its call returned (epoch µs; the task window's call headers), for one model."""
    device = read_device(layout.device_dir(only_prof_dir(output), 0))
    frame = device.trace.frame
    iteration_of = {int(r): int(i) for m, r, i in zip(frame["model_id"], frame["run"], frame["iteration_id"]) if m == model_id}
    windows = iter_framed_records(layout.xspace_path(only_prof_dir(output), 0), layout.XSPACE_MAGIC, parse_xspace_header)
    calls = [c for w in windows if isinstance(w, FramedRecord) for c in w.header[layout.K_CALLS] if c[layout.K_MODEL_ID] == model_id]
    return {iteration_of[c[layout.K_RUN]]: c[layout.K_RUN_END] for c in calls}


def tensorflow_kernels(payload: bytes) -> list[dict]:
    """The kernel runs in TensorFlow's own conversion of an XSpace (its trace viewer's Trace proto)."""
    try:  # TensorFlow 2.15; later versions moved the converter to the profiler plugin's module
        from tensorflow.python.profiler.internal._pywrap_profiler import xspace_to_tools_data_from_byte_string as convert
    except ImportError:
        from tensorflow.python.profiler.internal._pywrap_profiler_plugin import xspace_to_tools_data_from_byte_string as convert
    from tensorflow.tsl.profiler.protobuf import trace_events_pb2

    # The converter wants a path named for the host that made the trace: this one.
    data, ok = convert([payload], [f"{socket.gethostname()}.xplane.pb"], "trace_viewer")
    assert ok
    trace = trace_events_pb2.Trace()
    trace.ParseFromString(data)
    # A kernel run is "<op name>:<op type>" (the event's long_name, or for _Send/_Recv its name), the rule the
    # package reads by too; what this holds is the decoding: times, durations, threads, step groups.
    events = [(e.args.get("long_name", e.name), e) for e in trace.trace_events]
    return [{"label": label, "start_ps": e.timestamp_ps, "duration_ps": e.duration_ps, "thread": e.resource_id,
             "group": e.args.get("group_id")}
            for label, e in events if ":" in label and "::" not in label and not label.startswith("Eager")]


def assert_xspace_read_as_tensorflow_reads_it(prof: Path) -> None:
    windows = [item for item in iter_framed_records(layout.xspace_path(prof, 0), layout.XSPACE_MAGIC, parse_xspace_header)
               if isinstance(item, FramedRecord)]
    assert windows
    for window in windows:
        payload = bytes(window.payload)
        ours = xspace.host_trace(payload).kernels
        theirs = tensorflow_kernels(payload)
        as_ours = sorted((f"{k.name}:{k.op_type}", round(k.start_us * 1e6), round((k.end_us - k.start_us) * 1e6), k.thread) for k in ours)
        as_theirs = sorted((t["label"], t["start_ps"], t["duration_ps"], t["thread"]) for t in theirs)
        assert [k[:3] for k in as_ours] == [t[:3] for t in as_theirs]
        # The same threads (TensorFlow numbers them its own way: one of ours is one of theirs)
        threads = {(k[3], t[3]) for k, t in zip(as_ours, as_theirs)}
        assert len(threads) == len({k for k, _ in threads}) == len({t for _, t in threads})
        # Each call's kernels are one of TensorFlow's step groups, whole (a group's kernels never split across calls).
        calls = window.header[layout.K_CALLS]
        stats = xspace.calls_step_stats(payload, window.header[layout.K_ANCHORS],
                                        [(c[layout.K_RUN_START], c[layout.K_RUN_END]) for c in calls])
        offset_us = xspace.epoch_offset(xspace.host_trace(payload), window.header[layout.K_ANCHORS])
        group_of = {(t["label"].split(":")[0], round((t["start_ps"] / 1e6 + offset_us) * 1e3)): t["group"] for t in theirs}
        call_groups: dict[int, set] = defaultdict(set)
        for index, message in enumerate(stats):
            for node in message.dev_stats[0].node_stats:  # the epoch ns of a kernel's start, to a float's last bit
                near = (group_of.get((node.node_name, node.all_start_nanos + d)) for d in (0, -1, 1, -2, 2))
                call_groups[index].add(next((g for g in near if g is not None), None))
        # TensorFlow's grouping leaves some kernels without a group (their events have no group_id), in any call:
        # - a window's very first kernels (seen on the first call only, its reads in the first ~130 µs,
        #   once they no longer wait for the batch);
        # - now and then, some or all kernels of a call (TF 2.21 `loop`: all of the window's last call, 2 runs of 4 on
        #   2026-12-03; TF 2.15 `fit`: some of the last call's, once in a fresh-clone suite run; TF 2.15 `loop`: some
        #   of a middle call's, once in a fresh-clone suite run on 2026-12-05). Why TensorFlow leaves them out is not
        #   known, and which kernels is not ours to hold; our split still puts each call's kernels in its own
        #   iteration (the task checks of the test). What the groups can check is that the split agrees with
        #   TensorFlow's steps where TensorFlow names them: no call holds two groups, and no group spans two calls.
        assert len(call_groups) == len(calls), call_groups
        for groups in call_groups.values():
            assert len(groups - {None}) <= 1, call_groups
        grouped = [g for groups in call_groups.values() for g in groups - {None}]
        assert grouped and len(set(grouped)) == len(grouped), call_groups  # one group per call, none shared
