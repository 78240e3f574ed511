"""Synthesise a multi-worker output folder (one PROF_* per rank), without TensorFlow (tests, benchmark).

Each step follows what a synchronous all-reduce does: every rank reads its
batch (``data_aug``), runs forward + backward (``fp_bp``) and enters the
all-reduce when its gradients are ready; the all-reduce ends ``comm`` µs after
the *last* rank arrived, so the others' Reduce includes their wait; then each
rank updates (``refresh``) and the step ends. A slow rank (``slow``) adds to
its input or compute time; ``clock_offset_us`` moves a rank's clock (another
host); ``drop`` removes steps from a rank (a lost record, a rank killed).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
import numpy as np

from npu_tf_profiling.raw_format import layout

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
    clock_offset_us: dict[int, float] = field(default_factory=dict)
    hosts: dict[int, str] = field(default_factory=dict)  # default: one host "node0"
    drop: dict[int, set[int]] = field(default_factory=dict)  # rank -> steps left out of its file
    seed: int = 0


def simulate(plan: ClusterPlan) -> dict[int, list[dict]]:
    """rank -> its training_trace records (every step; ``drop`` is applied when writing)."""
    rng = np.random.default_rng(plan.seed)
    n, s = plan.ranks, plan.steps
    noise = lambda: 1.0 + plan.jitter * rng.standard_normal((s, n))  # noqa: E731
    aug = plan.data_aug * noise()
    fpbp = plan.fp_bp * noise()
    refresh = plan.refresh * np.abs(noise())
    for rank, (kind, extra) in plan.slow.items():
        (aug if kind == "input" else fpbp)[:, rank] += extra
    records: dict[int, list[dict]] = {r: [] for r in range(n)}
    prev_end = np.full(n, T0)
    g = max(plan.groups, 1)
    for i in range(s):
        gn_end = prev_end + aug[i] * 0.9
        gn_start = prev_end + aug[i] * 0.1
        fp = prev_end + aug[i]
        bp = fp + fpbp[i]
        done = bp.max() + plan.comm
        # group k of every rank starts when that rank is ready (its own bp, then the previous group)
        edges = [bp + (done - bp) * k / g for k in range(g + 1)]
        end = done + refresh[i]
        for r in range(n):
            offset = plan.clock_offset_us.get(r, 0.0)
            records[r].append({
                layout.K_MODEL_ID: 1, layout.K_RUN: i + 1, layout.K_STEP: i + 1,
                layout.K_GET_NEXT: [[round(gn_start[r] + offset, 1), round(gn_end[r] + offset, 1)]],
                layout.K_FP_START: round(fp[r] + offset, 1), layout.K_BP_END: round(bp[r] + offset, 1),
                layout.K_REDUCE: [[round(edges[k][r] + offset, 1), round(edges[k + 1][r] + offset, 1)] for k in range(g)],
                layout.K_ITERATION_END: round(end[r] + offset, 1),
            })
        prev_end = end
    return records


def write_cluster(root: Path | str, plan: ClusterPlan) -> dict[int, Path]:
    """Write one ``PROF_<pid>_<ts>_<id>/device_<rank>`` per rank under ``root``; rank -> its PROF folder."""
    root = Path(root)
    out: dict[int, Path] = {}
    for rank, recs in simulate(plan).items():
        prof = root / f"{layout.PROF_DIR_PREFIX}{10000 + rank}_20240102030405_RANK{rank:04d}"
        ddir = layout.device_dir(prof, rank)
        (ddir / layout.DATA_DIR).mkdir(parents=True, exist_ok=True)
        info = {"device_id": rank, "rank_id": rank, "rank_size": plan.ranks, "host": plan.hosts.get(rank, "node0"), "pid": 10000 + rank}
        (ddir / layout.INFO_FILE).write_text(json.dumps(info))
        dropped = plan.drop.get(rank, set())
        text = "".join(json.dumps(r, separators=(",", ":")) + "\n" for r in recs if r[layout.K_STEP] not in dropped)
        layout.training_trace_path(prof, rank).write_text(text)
        out[rank] = prof
    return out


def total_bytes(root: Path | str) -> int:
    return sum(f.stat().st_size for f in Path(root).rglob("*") if f.is_file())

