"""task_xspace.bin, the raw TensorFlow 2 task windows, read without TensorFlow (reports.task.xspace).

The XSpace here is built with the package's own declared messages: a host plane
whose python thread ran the two eager tf.timestamp() anchors and whose compute
thread ran two calls' kernels, with the runtime's scopes around them. The trace's
clock starts at 0; the anchors (each read at the end of its kernel run, as
measured on real traces) put it on the epoch at EPOCH_US, and so do the step
trace's stamps (probe kernels whose values the training trace holds). What a
real profiler trace gives is held against TensorFlow's own conversion in
tests/test_tf2_tasks.py.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from npu_tf_profiling.raw_format import layout
from npu_tf_profiling.raw_format.errors import RawDataWarning
from npu_tf_profiling.raw_format.task_record import frame_task_record
from npu_tf_profiling.reports.step.records import pair_column
from npu_tf_profiling.reports.task import xspace
from npu_tf_profiling.reports.task.records import read_task_trace
from npu_tf_profiling.reports.task.traced import traced_runs

EPOCH_US = 1_800_000_000_000_000.0
THREAD = 7
# (start µs, duration µs, label) in the trace's clock; calls span 100-200 and 300-400
KERNELS = [(110.0, 5.0, "dense/MatMul:_MklMatMul"), (120.0, 2.5, "dense/Relu:Relu"), (190.0, 4.0, "Adam/Assign:AssignVariableOp"),
           (310.0, 5.0, "dense/MatMul:_MklMatMul"), (330.0, 1.0, "dense/Relu:Relu")]
SCOPES = [(105.0, 95.0, "ExecutorState::Process"), (250.0, 10.0, "Iterator::Root::Prefetch")]
ANCHOR_RUNS = [(10.0, 4.0), (500.0, 4.0)]  # the eager Timestamp kernel runs, inside their EagerLocalExecute


def serialized_space(anchor_runs: list[tuple[float, float]] = ANCHOR_RUNS, probes: list[tuple[float, float, str]] = ()) -> bytes:
    space = xspace.XSpace()
    plane = space.planes.add(id=1, name=xspace.HOST_PLANE)
    labels: dict[str, int] = {}

    def event(line, start: float, duration: float, label: str) -> None:
        if label not in labels:
            labels[label] = len(labels) + 1
            plane.event_metadata[labels[label]].name = label
            plane.event_metadata[labels[label]].id = labels[label]
        line.events.add(metadata_id=labels[label], offset_ps=int(start * 1e6), duration_ps=int(duration * 1e6))

    python = plane.lines.add(id=1, name="python", timestamp_ns=0)
    for start, duration in anchor_runs:
        event(python, start - 2, duration + 4, "EagerLocalExecute: Timestamp")
        event(python, start, duration, "EagerKernelExecute")
    compute = plane.lines.add(id=THREAD, name="tf_Compute", timestamp_ns=0)
    for start, duration, label in SCOPES + KERNELS + list(probes):
        event(compute, start, duration, label)
    space.planes.add(id=2, name="/device:GPU:0")  # another plane: not read
    return space.SerializeToString()


def call(run: int, start: float, end: float) -> dict:
    return {"model_id": 1, "run": run, "step": None, "run_start_us": EPOCH_US + start, "run_end_us": EPOCH_US + end}


def window(payload: bytes, calls: list[dict], anchors: list[float] | None = None) -> bytes:
    anchors = anchors or [EPOCH_US + start + duration for start, duration in ANCHOR_RUNS]
    return frame_task_record({layout.K_ANCHORS: anchors, layout.K_CALLS: calls}, payload, layout.XSPACE_MAGIC)


def xspace_file(tmp_path: Path) -> Path:
    path = layout.xspace_path(tmp_path, 0)
    path.parent.mkdir(parents=True)
    return path


def test_each_call_gets_its_kernels_on_the_epoch(tmp_path):
    path = xspace_file(tmp_path)
    path.write_bytes(window(serialized_space(), [call(3, 100, 200), call(4, 300, 400)]))
    trace = read_task_trace(path)
    assert trace.records["run"].tolist() == [3, 4]
    assert trace.node_count == len(KERNELS)  # the scopes and the anchors are not kernels
    names = [trace.names[code] for code in trace.name]
    assert names == [label.split(":")[0] for _, _, label in KERNELS]
    assert trace.record.tolist() == [0, 0, 0, 1, 1]
    assert trace.start_ns.tolist() == [round((EPOCH_US + start) * 1e3) for start, _, _ in KERNELS]
    assert (trace.end_ns - trace.start_ns).tolist() == [round(duration * 1e3) for _, duration, _ in KERNELS]
    assert set(trace.thread.tolist()) == {THREAD}
    assert [trace.label_type(code) for code in sorted(set(trace.name.tolist()))] == ["_MklMatMul", "Relu", "AssignVariableOp"]
    assert traced_runs(layout.device_dir(tmp_path, 0)) == {(1, 3), (1, 4)}


def test_a_torn_window_and_a_bad_payload_are_skipped_with_the_iterations_they_held(tmp_path):
    path = xspace_file(tmp_path)
    good = window(serialized_space(), [call(1, 100, 200)])
    bad = window(b"\xff\xff not an xspace", [call(2, 100, 200), call(3, 300, 400)])
    no_anchor_runs = window(xspace.XSpace().SerializeToString(), [call(4, 100, 200)])
    torn = window(serialized_space(), [call(5, 100, 200)])
    path.write_bytes(good + bad + no_anchor_runs + torn[:-30])
    with pytest.warns(RawDataWarning) as caught:
        trace = read_task_trace(path)
    message = str(caught[0].message)
    assert "task_xspace.bin: skipped 3 unusable part(s)" in message
    assert f"offset {len(good)}: payload is not a usable XSpace" in message and "2 iteration(s) lost" in message
    assert "the trace holds 0 of the 2 clock anchors" in message
    assert "incomplete last record" in message
    assert trace.records["run"].tolist() == [1]


def test_a_header_without_anchors_is_not_a_window(tmp_path):
    path = xspace_file(tmp_path)
    path.write_bytes(frame_task_record({layout.K_CALLS: [call(1, 100, 200)]}, serialized_space(), layout.XSPACE_MAGIC))
    with pytest.warns(RawDataWarning, match="'anchors_us' is not a list of two times"):
        assert read_task_trace(path).records.empty


def probe(start: float, point: str, duration: float = 0.5) -> tuple[float, float, str]:
    return (start, duration, f"npu_tf_profiling_probes/{point}:Timestamp")


def kernel_starts(trace) -> list[float]:
    return [ns / 1e3 - EPOCH_US for ns in trace.start_ns.tolist()]


def test_a_preempted_anchor_run_does_not_move_the_tasks(tmp_path):
    """The first anchor's kernel run was preempted (3 ms long; its value is read at its end): the shorter run places
    the clock. Its midpoint, used before, put every task 750 µs late, into the next call or none."""
    runs = [(-3000.0, 3004.0), (500.0, 4.0)]
    path = xspace_file(tmp_path)
    path.write_bytes(window(serialized_space(runs), [call(3, 100, 200), call(4, 300, 400)], [EPOCH_US + s + d for s, d in runs]))
    assert kernel_starts(read_task_trace(path)) == pytest.approx([start for start, _, _ in KERNELS], abs=1e-3)


def test_the_step_trace_stamps_place_the_clock_when_both_anchors_are_off(tmp_path):
    """Both anchors read 2 ms late (their runs preempted past their ends): the probe kernels, paired with the
    values their stamps read, place the clock; a probe preempted after its start (its value 20 µs late) is outvoted."""
    probes = [probe(101.0, "get_next_start"), probe(150.0, "bp_end"), probe(195.0, "iteration_end"),
              probe(301.0, "get_next_start"), probe(350.0, "bp_end", duration=25.0), probe(395.0, "iteration_end")]
    late = {350.0: 20.0}
    marks = np.array(sorted(EPOCH_US + start + late.get(start, 0.5) for start, _, _ in probes))
    frame = pd.DataFrame({"fp_start": [np.nan] * 2, "bp_end": marks[[1, 4]], "iteration_end": marks[[2, 5]],
                          "get_next": [1, 1], pair_column("get_next", 0, "start"): marks[[0, 3]],
                          pair_column("get_next", 0, "end"): [np.nan] * 2, "reduce": [0, 0]})
    path = xspace_file(tmp_path)
    anchors = [EPOCH_US + s + d + 2000.0 for s, d in ANCHOR_RUNS]
    path.write_bytes(window(serialized_space(probes=probes), [call(3, 100, 200), call(4, 300, 400)], anchors))
    trace = read_task_trace(path, frame)
    expected = sorted([start for start, _, _ in KERNELS] + [start for start, _, _ in probes])
    assert kernel_starts(trace) == pytest.approx([start + 0.5 for start in expected], abs=1e-3)
    assert trace.record.tolist() == [0] * 6 + [1] * 5  # each call its own kernels and stamps
    # Without the training trace the anchors place it: 2 ms off, every kernel outside its call.
    assert read_task_trace(path).node_count == 0


def test_a_job_repeating_to_the_microsecond_is_not_placed_an_iteration_off(tmp_path):
    """Calls exactly 200 µs apart, their stamps at the same phase: the pairing one iteration off is as dense as the
    true one (the stamps of the iterations around the window are marks too). The anchors, 120 µs off (both runs
    preempted), are nearer the wrong one; the calls decide: shifted, the edge call's stamps fall outside every call."""
    probes = [probe(105.0 + 200 * i, "iteration_end") for i in range(2)]
    marks = np.array([EPOCH_US + 105.0 + 200 * i for i in range(-2, 4)])
    frame = pd.DataFrame({"fp_start": np.nan, "bp_end": np.nan, "iteration_end": marks, "get_next": 0, "reduce": 0})
    path = xspace_file(tmp_path)
    anchors = [EPOCH_US + s + d - 120.0 for s, d in ANCHOR_RUNS]
    path.write_bytes(window(serialized_space(probes=probes), [call(3, 100, 200), call(4, 300, 400)], anchors))
    assert kernel_starts(read_task_trace(path, frame)) == pytest.approx(sorted([s for s, _, _ in KERNELS] + [105.0, 305.0]), abs=1e-3)
