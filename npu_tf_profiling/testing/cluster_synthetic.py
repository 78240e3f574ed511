"""Synthesise a multi-worker output folder (one PROF_* per rank), without TensorFlow (tests, benchmark).

Each step follows what a synchronous all-reduce does: every rank reads its
batch (``data_aug``), runs forward + backward (``fp_bp``) and enters the
all-reduce when its gradients are ready; the all-reduce ends ``comm`` µs after
the *last* rank arrived, so the others' Reduce includes their wait; then each
rank updates (``refresh``) and the step ends. A slow rank (``slow``) adds to
its input or compute time; ``clock_offset_us`` moves a rank's clock (another
host); ``drop`` removes steps from a rank (a lost record, a rank killed).

``binary=True`` writes each rank's records as ``training_trace.bin`` frames
(``raw_format.training_frame``, what the runtime writes), computed with numpy
for every rank at once: thousands of ranks x 1,000 steps take seconds, for the
scale benchmark (``benchmarks/scale.py``).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
import numpy as np

from npu_tf_profiling.raw_format import layout
from npu_tf_profiling.raw_format.prof_name import ProfName
from npu_tf_profiling.raw_format.training_frame import RecordShape, encode_frame

T0 = 1_700_000_000_000_000.0  # µs since the epoch (Nov 2023)


@dataclass
class ClusterPlan:
    ranks: int = 3
    steps: int = 30
    data_aug: float = 300.0
    fp_bp: float = 2_000.0
    refresh: float = 200.0
    comm: float = 500.0
    jitter: float = 0.05  # relative noise on every phase, per rank and step
    groups: int = 1  # all-reduce groups (split evenly over the communication time)
    slow: dict[int, tuple[str, float]] = field(default_factory=dict)  # rank -> ("input"|"compute", extra µs)
    slow_steps: dict[int, tuple[int, int]] = field(default_factory=dict)  # rank -> its slow steps first..last (default: all)
    clock_offset_us: dict[int, float] = field(default_factory=dict)
    hosts: dict[int, str] = field(default_factory=dict)  # default: one host "node0"
    drop: dict[int, set[int]] = field(default_factory=dict)  # rank -> steps left out of its file
    seed: int = 0
    binary: bool = False  # training_trace.bin frames instead of JSON lines


@dataclass
class Simulated:
    """Every rank's times, (steps, ranks) arrays of µs on the rank's own clock (offset applied)."""

    gn_start: np.ndarray
    gn_end: np.ndarray
    fp: np.ndarray
    bp: np.ndarray
    edges: list[np.ndarray]  # all-reduce group k runs edges[k] -> edges[k + 1]
    end: np.ndarray


def simulate_arrays(plan: ClusterPlan) -> Simulated:
    """The plan's times for every step and rank (``drop`` is applied when writing)."""
    rng = np.random.default_rng(plan.seed)
    n, s = plan.ranks, plan.steps
    noise = lambda: 1.0 + plan.jitter * rng.standard_normal((s, n))  # noqa: E731
    aug = plan.data_aug * noise()
    fpbp = plan.fp_bp * noise()
    refresh = plan.refresh * np.abs(noise())
    for rank, (kind, extra) in plan.slow.items():
        first, last = plan.slow_steps.get(rank, (1, s))
        (aug if kind == "input" else fpbp)[first - 1:last, rank] += extra
    prev_end = np.full(n, T0)
    ends = np.empty((s, n))
    for i in range(s):  # each step starts where the rank's previous one ended
        bp_i = prev_end + aug[i] + fpbp[i]
        ends[i] = bp_i.max() + plan.comm + refresh[i]
        prev_end = ends[i]
    starts = np.vstack([np.full((1, n), T0), ends[:-1]])
    fp = starts + aug
    bp = fp + fpbp
    done = bp.max(axis=1, keepdims=True) + plan.comm
    g = max(plan.groups, 1)
    # group k of every rank starts when that rank is ready (its own bp, then the previous group)
    edges = [bp + (done - bp) * k / g for k in range(g + 1)]
    offset = np.array([plan.clock_offset_us.get(r, 0.0) for r in range(n)])[None, :]
    return Simulated(gn_start=starts + aug * 0.1 + offset, gn_end=starts + aug * 0.9 + offset, fp=fp + offset, bp=bp + offset,
                     edges=[e + offset for e in edges], end=ends + offset)


def simulate(plan: ClusterPlan) -> dict[int, list[dict]]:
    """rank -> its training_trace records (every step; ``drop`` is applied when writing)."""
    sim = simulate_arrays(plan)
    g = len(sim.edges) - 1
    records: dict[int, list[dict]] = {r: [] for r in range(plan.ranks)}
    for i in range(plan.steps):
        for r in range(plan.ranks):
            records[r].append({
                layout.K_MODEL_ID: 1, layout.K_RUN: i + 1, layout.K_STEP: i + 1,
                layout.K_GET_NEXT: [[round(sim.gn_start[i, r], 1), round(sim.gn_end[i, r], 1)]],
                layout.K_FP_START: round(sim.fp[i, r], 1), layout.K_BP_END: round(sim.bp[i, r], 1),
                layout.K_REDUCE: [[round(sim.edges[k][i, r], 1), round(sim.edges[k + 1][i, r], 1)] for k in range(g)],
                layout.K_ITERATION_END: round(sim.end[i, r], 1),
            })
    return records


def _binary_traces(plan: ClusterPlan) -> dict[int, bytes]:
    """rank -> its training_trace.bin bytes: one frame of every step it keeps (times rounded to 0.1 µs, as the JSON)."""
    sim = simulate_arrays(plan)
    g = len(sim.edges) - 1
    shape = RecordShape(get_next_pairs=1, has_fp=True, has_bp=True, reduce_pairs=g, has_step=True)
    reduce_cols = [col for k in range(g) for col in (sim.edges[k], sim.edges[k + 1])]
    times = np.round(np.stack([sim.gn_start, sim.gn_end, sim.fp, sim.bp, *reduce_cols, sim.end], axis=2), 1)  # (steps, ranks, times)
    step_ids = np.arange(1, plan.steps + 1)
    out: dict[int, bytes] = {}
    for r in range(plan.ranks):
        keep = ~np.isin(step_ids, list(plan.drop.get(r, set())))
        rows = np.zeros(int(keep.sum()), dtype=shape.dtype)
        rows["run"] = step_ids[keep]
        rows["step"] = step_ids[keep]
        rows["times"] = times[keep, r, :]
        out[r] = encode_frame(1, shape, rows)
    return out


def write_cluster(root: Path | str, plan: ClusterPlan) -> dict[int, Path]:
    """Write one ``PROF_<pid>_<ts>_<id>/device_<rank>`` per rank under ``root``; rank -> its PROF folder."""
    root = Path(root)
    out: dict[int, Path] = {}
    traces = _binary_traces(plan) if plan.binary else {r: _json_lines(recs, plan.drop.get(r, set())) for r, recs in simulate(plan).items()}
    for rank, trace in traces.items():
        prof = root / str(ProfName(10000 + rank, "20240102030405", f"RANK{rank:04d}"))
        ddir = layout.device_dir(prof, rank)
        (ddir / layout.DATA_DIR).mkdir(parents=True, exist_ok=True)
        info = {"device_id": rank, "rank_id": rank, "rank_size": plan.ranks, "host": plan.hosts.get(rank, "node0"), "pid": 10000 + rank}
        (ddir / layout.INFO_FILE).write_text(json.dumps(info))
        path = layout.training_frames_path(prof, rank) if plan.binary else layout.training_trace_path(prof, rank)
        path.write_bytes(trace)
        out[rank] = prof
    return out


def _json_lines(records: list[dict], dropped: set[int]) -> bytes:
    return "".join(json.dumps(r, separators=(",", ":")) + "\n" for r in records if r[layout.K_STEP] not in dropped).encode()


def total_bytes(root: Path | str) -> int:
    return sum(f.stat().st_size for f in Path(root).rglob("*") if f.is_file())

