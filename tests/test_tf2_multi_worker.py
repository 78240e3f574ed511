"""TensorFlow 2 multi-worker training (MultiWorkerMirroredStrategy) on localhost: per-rank step traces and the cluster report.

Two workers of tests/scripts/tf2_train.py, each its own process with its
TF_CONFIG on free localhost ports and the same env request, write one
``PROF_*/device_<rank>`` folder each (the rank is the TF_CONFIG task index);
``npu-tf-prof cluster`` then merges them. Styles: a custom step
(`strategy.run` in a `tf.function`, the distributed dataset read in the
graph) and Keras `fit`.
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from npu_tf_profiling.cli import main
from tests.helpers.multi_worker_jobs import SAMPLE
from tests.helpers.side_by_side import Command, run_side_by_side
from tests.test_multi_worker import rank_folders
from tests.helpers.trace_files import assert_step_trace_formulas, step_trace_rows

SCRIPT = Path(__file__).parent / "scripts" / "tf2_train.py"
STEPS = 10
WORKERS = 2
TIMEOUT_S = 180


def run_jobs(style: str, outputs: list[Path | None]) -> list[list[dict]]:
    """One job of WORKERS workers per output (None: unprofiled), all side by side; each worker's printed result."""
    commands = []
    for output in outputs:
        cluster = {"worker": [f"localhost:{port}" for port in SAMPLE.free_ports(WORKERS)]}
        for index in range(WORKERS):
            env = {k: v for k, v in os.environ.items() if not k.startswith(("PROFILING_", "RANK_", "DEVICE_"))}
            env.update(TF_CONFIG=json.dumps({"cluster": cluster, "task": {"type": "worker", "index": index}}), TF_CPP_MIN_LOG_LEVEL="2")
            if output is not None:
                env.update(PROFILING_MODE="true", PROFILING_OPTIONS=json.dumps({"output": str(output), "training_trace": "on"}))
            commands.append(Command([sys.executable, str(SCRIPT), style, str(STEPS)], env))
    results = []
    for done in run_side_by_side(commands, timeout=TIMEOUT_S):
        assert done.returncode == 0, done.stderr[-3000:]
        results.append(json.loads(done.stdout.splitlines()[-1]))
    return [results[i:i + WORKERS] for i in range(0, len(results), WORKERS)]


@pytest.mark.timeout(TIMEOUT_S + 60)
@pytest.mark.parametrize("style", ["multi_worker", "multi_worker_fit"])
def test_each_rank_traces_every_step_and_the_cluster_report_merges_them(tmp_path: Path, style: str, capsys) -> None:
    import tensorflow as tf

    if style == "multi_worker_fit" and tuple(int(p) for p in tf.__version__.split(".")[:2]) >= (2, 16):
        pytest.skip("Keras 3's fit under MultiWorkerMirroredStrategy fails unprofiled too (it cannot convert the "
                    "PerReplica batch to a tensor): nothing to profile")
    profiled, plain = run_jobs(style, [tmp_path, None])
    assert [r["weights"] for r in profiled] == [r["weights"] for r in plain]
    folders = rank_folders(tmp_path)
    assert sorted(folders) == list(range(WORKERS))
    for rank, prof in folders.items():
        info = json.loads((prof / f"device_{rank}" / "info.json").read_text())
        assert info["rank_id"] == rank and info["source"] == "env"
        (model,) = info["models"].values()
        assert model["all_reduce"] and all(op.rsplit("/", 1)[-1].startswith("CollectiveReduce") for group in model["all_reduce"] for op in group)
        header, rows = step_trace_rows(prof.parent, prof=prof)
        assert [int(r["Iteration ID"]) for r in rows] == list(range(1, STEPS + 1))
        assert "Reduce Start(us)" in header
        assert_step_trace_formulas(rows)
        for row in rows:
            assert row["Reduce Start(us)"] != "N/A" and int(row["FP Start(us)"]) <= int(row["Reduce Start(us)"])
            assert int(row["Reduce Start(us)"]) + int(row["Reduce Duration(us)"]) <= int(row["Iteration End(us)"])
            assert row["GetNext Time(us)"] != "N/A"
    assert main(["cluster", str(tmp_path)]) == 0
    printed = capsys.readouterr().out
    verdict = json.loads((tmp_path / "npu_tf_prof_cluster" / "slow_rank.json").read_text())
    assert verdict["ranks"] == list(range(WORKERS)) and verdict["missing_steps"]["total_missing"] == 0
    assert "Missing steps: none" in printed
