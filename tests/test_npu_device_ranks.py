"""`npu_device.distribute` across ranks: two processes of the ModelZoo-style custom loop, RANK_SIZE=2.

Each rank starts from weights of its own seed and trains on its own shard
(`shard_and_rebatch_dataset`); `broadcast` gives both rank 0's weights and
`all_reduce` averages the gradients, so both ranks end with the same weights,
which neither collective alone would give. Each rank's step trace has the
collective in its Reduce columns, and `npu-tf-prof cluster` merges the two.
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from npu_tf_profiling.cli import main
from tests.helpers.multi_worker_jobs import SAMPLE
from tests.helpers.side_by_side import Command, run_side_by_side
from tests.test_multi_worker import rank_folders
from tests.test_npu_device_scripts import CONSOLE_SCRIPT, FOLDER
from tests.helpers.trace_files import assert_step_trace_formulas, step_trace_rows

RANKS = 2
STEPS = 6
TIMEOUT_S = 180


def run_ranks(output: Path) -> list[dict]:
    cluster = {"worker": [f"localhost:{port}" for port in SAMPLE.free_ports(RANKS)]}
    commands = []
    for rank in range(RANKS):
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PROFILING_", "RANK_", "DEVICE_"))}
        env.update(TF_CONFIG=json.dumps({"cluster": cluster, "task": {"type": "worker", "index": rank}}),
                   RANK_SIZE=str(RANKS), RANK_ID=str(rank), TF_CPP_MIN_LOG_LEVEL="2")
        commands.append(Command([CONSOLE_SCRIPT, "run", "custom_loop_train.py", "--steps", str(STEPS), "--seed_by_rank",
                                 "--profiling", "True", "--profiling_dump_path", str(output)], env, FOLDER))
    results = []
    for done in run_side_by_side(commands, timeout=TIMEOUT_S):
        assert done.returncode == 0, done.stderr[-3000:]
        results.append(json.loads(done.stdout.splitlines()[-1]))
    return results


@pytest.mark.timeout(TIMEOUT_S + 60)
def test_two_ranks_broadcast_and_all_reduce_and_each_traces_its_collectives(tmp_path: Path) -> None:
    results = run_ranks(tmp_path)
    assert results[0]["weights"] == results[1]["weights"]  # rank 0's start, the same averaged steps
    folders = rank_folders(tmp_path)
    assert sorted(folders) == list(range(RANKS))
    for rank, prof in folders.items():
        info = json.loads((prof / f"device_{rank}" / "info.json").read_text())
        assert info["rank_id"] == rank and info["rank_size"] == RANKS
        (model,) = info["models"].values()
        assert model["all_reduce"] and all("CollectiveReduceV2" in op for group in model["all_reduce"] for op in group)
        header, rows = step_trace_rows(prof.parent, prof=prof)
        assert [int(r["Iteration ID"]) for r in rows] == list(range(1, STEPS + 1))
        assert "Reduce Start(us)" in header and all(r["Reduce Start(us)"] != "N/A" for r in rows)
        assert_step_trace_formulas(rows)
    assert main(["cluster", str(tmp_path)]) == 0
    verdict = json.loads((tmp_path / "npu_tf_prof_cluster" / "slow_rank.json").read_text())
    assert verdict["ranks"] == list(range(RANKS)) and verdict["missing_steps"]["total_missing"] == 0
