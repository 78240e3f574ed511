"""One side of a diff: what a PROF folder or an output folder (one device or a cluster) holds, per model and rank.

The folders are found and read as ``npu-tf-prof view`` reads them
(``run_input.find_input``: every PROF_* folder at or below the path, the
cluster analysis when two ranks or more have data), and each (rank, model)'s
iterations are the ones ``npu-tf-prof summary`` uses (``summary.basis_rows``:
steady, not task-traced, not retraced), with the phases the view draws (``view.phases``:
Reduce summed over the all-reduce groups). Nothing here computes a phase.

A model's own sample, on a cluster, is the mean over its ranks of each step
(Iteration ID): the ranks of a synchronous job wait for each other, so their
iterations are one event seen n times, not n independent iterations (pooling
them would make the interval n times too sure).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import numpy as np
import pandas as pd

from npu_tf_profiling.raw_format.run_info import RunInfo
from npu_tf_profiling.reports.errors import BadInputError
from npu_tf_profiling.reports.step import summary as sm
from npu_tf_profiling.reports.step import table as st
from npu_tf_profiling.reports.step.point_notes import model_entry
from npu_tf_profiling.reports.view import phases as ph
from npu_tf_profiling.reports.run_input import RunInput, find_input

PHASES = (ph.ITERATION_TIME, ph.DATA_AUG, ph.GETNEXT, ph.FP_BP, ph.REDUCE, ph.REFRESH)


@dataclass
class RankSample:
    """One rank's (device's) statistics iterations of one model: phase -> µs per iteration (NaN not measured)."""

    rank: int
    prof_dir: Path
    iteration_ids: np.ndarray
    phases: dict[str, np.ndarray]
    basis: str
    task_traced_left_out: int
    reduce_groups: int
    fp_point: Optional[str]
    bp_point: Optional[str]
    retraced: list[str] = field(default_factory=list)  # "Iteration ID 7: retrace of ...": left out like warm-up


@dataclass
class ModelSide:
    """One model on one side: its ranks."""

    model_id: int
    ranks: dict[int, RankSample] = field(default_factory=dict)

    def pooled(self, ranks: list[int]) -> dict[str, np.ndarray]:
        """Per phase, the mean over ``ranks`` of each step (one rank: its iterations as they are)."""
        if len(ranks) == 1:
            return self.ranks[ranks[0]].phases
        parts = [pd.DataFrame({"_id": self.ranks[r].iteration_ids, **self.ranks[r].phases}) for r in ranks]
        means = pd.concat(parts, ignore_index=True).groupby("_id", sort=True).mean()
        return {name: means[name].to_numpy(dtype="float64") for name in PHASES}


@dataclass
class Side:
    """Everything read from one path."""

    path: Path
    found: RunInput
    models: dict[int, ModelSide]

    @property
    def rank_ids(self) -> list[int]:
        return sorted({r for m in self.models.values() for r in m.ranks})


def _reduce_groups(rows: pd.DataFrame, n_reduce: int) -> int:
    return sum(1 for k in range(n_reduce) if rows[st.reduce_duration_key(k)].notna().any())


def read_side(path: Path | str) -> Side:
    """Read ``path`` (raises ``BadInputError``/``NothingFoundError`` as ``view`` does)."""
    return side_of(find_input(path))


def side_of(found: RunInput) -> Side:
    """The side of what ``run_input.find_input`` read; ``BadInputError`` when two PROF folders hold the same
    device and model: two runs in one folder, which the diff cannot tell apart."""
    path = found.root
    models: dict[int, ModelSide] = {}
    for data in found.loaded:
        infos = {d.device_id: d.info for d in data.devices}
        frame = sm.annotated(data)
        for (device_id, model_id), rows in frame.groupby([st.DEVICE_ID, st.MODEL_ID], sort=True):
            rank, model = int(device_id), int(model_id)
            side = models.setdefault(model, ModelSide(model))
            if rank in side.ranks:
                raise BadInputError(
                    f"{path}: device {rank}, Model ID {model} is in two PROF folders ({side.ranks[rank].prof_dir.name}, "
                    f"{data.prof_dir.name}): two runs in one folder; give the PROF_* folder of the run to compare")
            basis, used, included = sm.basis_rows(rows)
            values = ph.phase_values(used)
            entry = model_entry(infos.get(rank, RunInfo()), model)
            side.ranks[rank] = RankSample(
                rank=rank, prof_dir=data.prof_dir, iteration_ids=used[st.ITERATION_ID_COL].astype("int64").to_numpy(),
                phases={name: values[name] for name in PHASES}, basis=basis,
                task_traced_left_out=0 if included else int(rows["_disturbed"].sum()),
                reduce_groups=_reduce_groups(rows, data.table.n_reduce),
                fp_point=entry.get("fp") if isinstance(entry.get("fp"), str) else None,
                bp_point=entry.get("bp") if isinstance(entry.get("bp"), str) else None,
                retraced=[f"Iteration ID {i}: {words}" for i, words in zip(rows[st.ITERATION_ID_COL], rows["_retraced"]) if words],
            )
    return Side(path=path, found=found, models=models)
