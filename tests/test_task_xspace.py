"""task_xspace.bin, the raw TensorFlow 2 task windows, read without TensorFlow (reports.task.xspace).

The XSpace here is built with the package's own declared messages: a host plane
whose python thread ran the two eager tf.timestamp() anchors and whose compute
thread ran two calls' kernels, with the runtime's scopes around them. The trace's
clock starts at 0; the anchors put it on the epoch at EPOCH_US. What a real
profiler trace gives is held against TensorFlow's own conversion in
tests/test_tf2_tasks.py.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from npu_tf_profiling.raw_format import layout
from npu_tf_profiling.raw_format.errors import RawDataWarning
from npu_tf_profiling.raw_format.task_record import frame_task_record
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


def serialized_space() -> bytes:
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
    for start, duration in ANCHOR_RUNS:
        event(python, start - 2, duration + 4, "EagerLocalExecute: Timestamp")
        event(python, start, duration, "EagerKernelExecute")
    compute = plane.lines.add(id=THREAD, name="tf_Compute", timestamp_ns=0)
    for start, duration, label in SCOPES + KERNELS:
        event(compute, start, duration, label)
    space.planes.add(id=2, name="/device:GPU:0")  # another plane: not read
    return space.SerializeToString()


def call(run: int, start: float, end: float) -> dict:
    return {"model_id": 1, "run": run, "step": None, "run_start_us": EPOCH_US + start, "run_end_us": EPOCH_US + end}


def window(payload: bytes, calls: list[dict]) -> bytes:
    anchors = [EPOCH_US + start + duration / 2 for start, duration in ANCHOR_RUNS]
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
