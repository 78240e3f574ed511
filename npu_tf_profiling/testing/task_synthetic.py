"""Synthesise PROF folders with task_trace data, without TensorFlow (tests and the benchmark).

Each synthetic iteration follows one plan: ``ops`` laid out on TensorFlow
threads, ``data_aug`` µs of input time before FP start, ``refresh`` µs after
the last op. The step stats look like a real FULL_TRACE payload: besides the
fields the reports read, every node carries an ``output`` (with an allocation
description) and ``memory_stats``, which the reports' descriptor does not
declare (so decoding must skip them, as with real data), and timeline labels
name the inputs (``name = Type(a, b)``) so TensorFlow's own timeline draws
data flows for the benchmark's comparison.

Plumbing (``_SOURCE``, ``_SINK``, ``_retval_*``) and a profiler probe node are
added to every iteration unless switched off, so the skip rules are exercised.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Optional, Sequence

from npu_tf_profiling.raw_format import layout
from npu_tf_profiling.raw_format.prof_name import ProfName
from npu_tf_profiling.reports.task import step_stats
from npu_tf_profiling.raw_format.task_record import frame_task_record
from npu_tf_profiling.reports.task.classify import PROBE_PREFIX

T0_NS = 1_700_000_000_000_000_000  # Nov 2023, ns since the epoch
PROF_TS = "20240102030405"
CPU_DEVICE = "/job:localhost/replica:0/task:0/device:CPU:0"
PLUMBING = ("_SOURCE", "_SINK", "_retval_loss_0_0")
PROBE_NAME = PROBE_PREFIX + "fp_start"


@dataclass(frozen=True)
class SynthOp:
    """One op of the plan: starts ``offset_ns`` after FP start, on ``thread`` of ``device``."""

    name: str
    op_type: str
    offset_ns: int
    dur_ns: int
    thread: int = 0
    device: str = CPU_DEVICE
    inputs: tuple[str, ...] = ()


def layered_ops(n_ops: int, threads: int = 2, dur_ns: int = 3_000, gap_ns: int = 500, types: Sequence[str] = ("MatMul", "Relu", "BiasAdd", "Mul", "AddV2")) -> list[SynthOp]:
    """``n_ops`` ops dealt round-robin over ``threads``, back to back (plus ``gap_ns``) on each thread.

    Durations vary per op (``dur_ns`` .. 2 x ``dur_ns``) but not per iteration.
    """
    ops = []
    next_free = [0] * threads
    for i in range(n_ops):
        thread = i % threads
        dur = dur_ns + (i * 7919) % dur_ns
        name = f"layer_{i // 10}/op_{i}"
        inputs = (f"layer_{i // 10}/op_{i - threads}",) if i >= threads else ()
        ops.append(SynthOp(name, types[i % len(types)], next_free[thread], dur, thread, CPU_DEVICE, inputs))
        next_free[thread] += dur + gap_ns
    return ops


def plan_length_ns(ops: Sequence[SynthOp]) -> int:
    return max((op.offset_ns + op.dur_ns for op in ops), default=0)


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _len_field(number: int, payload: bytes) -> bytes:
    return _varint((number << 3) | 2) + _varint(len(payload)) + payload


def _vint_field(number: int, value: int) -> bytes:
    return _varint(number << 3) + _varint(value)


def _unknown_tail(num_bytes: int) -> bytes:
    """NodeExecStats fields 7 (output) and 12 (memory_stats) as TensorFlow writes them."""
    allocation = _vint_field(1, num_bytes) + _len_field(3, b"cpu") + _vint_field(5, 94774346987008)
    shape = _len_field(2, _vint_field(1, max(1, num_bytes // 4)))
    tensor = _vint_field(1, 1) + _len_field(2, shape) + _len_field(4, allocation)
    output = _len_field(7, _len_field(3, tensor))
    memory_stats = _len_field(12, _vint_field(1, num_bytes))
    return output + memory_stats


class StepStatsTemplate:
    """A StepStats for one plan whose start times are moved per iteration (fast to re-serialize)."""

    def __init__(self, ops: Sequence[SynthOp], plumbing: bool = True, probes: bool = True, realistic: bool = True) -> None:
        entries: list[tuple[str, str, int, int, int, str, tuple[str, ...]]] = []
        if plumbing:
            entries.append(("_SOURCE", "NoOp", -2_000, 200, 0, CPU_DEVICE, ()))
        if probes:
            entries.append((PROBE_NAME, "Timestamp", -1_000, 300, 0, CPU_DEVICE, ()))
        for op in ops:
            entries.append((op.name, op.op_type, op.offset_ns, op.dur_ns, op.thread, op.device, op.inputs))
        if plumbing:
            end = plan_length_ns(ops)
            entries.append(("_retval_loss_0_0", "_Retval", end + 100, 200, 0, CPU_DEVICE, ()))
            entries.append(("_SINK", "NoOp", end + 400, 100, 0, CPU_DEVICE, ()))
        devices: dict[str, Any] = {}
        message = step_stats.StepStats()
        self._nodes: list[tuple[Any, int]] = []
        tail = _unknown_tail(256) if realistic else b""
        for name, op_type, offset, dur, thread, device, inputs in entries:
            dev = devices.get(device)
            if dev is None:
                dev = devices[device] = message.dev_stats.add()
                dev.device = device
            node = step_stats.NodeExecStats()
            node.node_name = name
            node.timeline_label = f"{name} = {op_type}({', '.join(inputs)})"
            node.thread_id = thread
            node.all_end_rel_nanos = dur
            node.all_end_rel_micros = max(dur // 1000, 1)
            node.op_start_rel_nanos = min(50, dur)
            node.op_end_rel_nanos = max(dur - 50, 0)
            node.op_start_rel_micros = 0
            node.op_end_rel_micros = node.op_end_rel_nanos // 1000
            # Parse the node back with the fields TensorFlow adds that our descriptor does not declare.
            parsed = dev.node_stats.add()
            parsed.ParseFromString(node.SerializeToString() + tail)
            self._nodes.append((parsed, offset))
        self.message = message
        self.entries = entries

    def serialize(self, fp_start_ns: int) -> bytes:
        for node, offset in self._nodes:
            start = fp_start_ns + offset
            node.all_start_nanos = start
            node.all_start_micros = start // 1000
            node.scheduled_nanos = start - 1_000
            node.scheduled_micros = (start - 1_000) // 1000
        return self.message.SerializeToString()


@dataclass
class SynthIteration:
    run: int
    step: Optional[int]
    run_start_us: float
    fp_start_ns: int
    run_end_us: float
    iteration_end_us: float
    traced: bool


@dataclass
class SynthRun:
    """What was written, for tests to compare against."""

    prof_dir: Path
    device_id: int
    model_id: int
    ops: list[SynthOp]
    iterations: list[SynthIteration] = field(default_factory=list)

    def traced(self) -> list[SynthIteration]:
        return [it for it in self.iterations if it.traced]


def write_synthetic_prof_dir(
    root: Path,
    n_iterations: int,
    ops: Sequence[SynthOp],
    *,
    traced: Optional[Iterable[int]] = None,
    device_id: int = 0,
    model_id: int = 1,
    pid: int = 4242,
    ts: str = PROF_TS,
    with_step: bool = False,
    training_trace: bool = True,
    graph_ops: bool = True,
    plumbing: bool = True,
    probes: bool = True,
    realistic: bool = True,
    data_aug_ns: int = 100_000,
    refresh_ns: int = 50_000,
    t0_ns: int = T0_NS,
    info: Optional[dict[str, Any]] = None,
    prof_dir: Optional[Path] = None,
) -> SynthRun:
    """Write ``n_iterations`` back-to-back iterations; task records only for runs in ``traced`` (default all).

    Appends to an existing PROF folder when ``prof_dir`` is given (another
    device or model). Returns what was written.
    """
    if prof_dir is None:
        prof_dir = Path(root) / str(ProfName(pid, ts, "abcdefgh"))
    traced_set = set(range(1, n_iterations + 1)) if traced is None else set(traced)
    ddir = layout.device_dir(prof_dir, device_id)
    data_dir = ddir / layout.DATA_DIR
    data_dir.mkdir(parents=True, exist_ok=True)
    info_path = ddir / layout.INFO_FILE
    if not info_path.exists():
        info_path.write_text(json.dumps(info if info is not None else {"device_id": device_id}))
    if graph_ops:
        layout.graph_ops_path(prof_dir, device_id, model_id).write_text(json.dumps({op.name: op.op_type for op in ops}))
    template = StepStatsTemplate(ops, plumbing=plumbing, probes=probes, realistic=realistic)
    length = plan_length_ns(ops)
    run = SynthRun(prof_dir=prof_dir, device_id=device_id, model_id=model_id, ops=list(ops))
    prev_end_ns = t0_ns
    with open(data_dir / layout.TASK_TRACE_FILE, "ab") as tasks, open(data_dir / layout.TRAINING_TRACE_FILE, "a") as trace:
        for i in range(1, n_iterations + 1):
            run_start_ns = prev_end_ns + 10_000
            fp_ns = run_start_ns + data_aug_ns
            end_ns = fp_ns + length + refresh_ns
            run_end_ns = end_ns + 20_000
            step = i if with_step else None
            it = SynthIteration(i, step, run_start_ns / 1000.0, fp_ns, run_end_ns / 1000.0, end_ns / 1000.0, i in traced_set)
            run.iterations.append(it)
            if training_trace:
                trace.write(json.dumps({
                    layout.K_MODEL_ID: model_id, layout.K_RUN: i, layout.K_STEP: step,
                    layout.K_GET_NEXT: [[(fp_ns - 50_000) / 1000.0, (fp_ns - 10_000) / 1000.0]],
                    layout.K_FP_START: fp_ns / 1000.0, layout.K_BP_END: (fp_ns + length) / 1000.0,
                    layout.K_REDUCE: [], layout.K_ITERATION_END: end_ns / 1000.0,
                }) + "\n")
            if it.traced:
                header = {layout.K_MODEL_ID: model_id, layout.K_RUN: i, layout.K_STEP: step,
                          layout.K_RUN_START: it.run_start_us, layout.K_RUN_END: it.run_end_us}
                tasks.write(frame_task_record(header, template.serialize(fp_ns)))
            prev_end_ns = run_end_ns
    return run
