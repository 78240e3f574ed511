"""Multi-rank Ascend-style training in real processes on localhost: collectives, broadcast, failures, profiling.

Every job runs tests/scripts/rank_worker.py once per rank, with RANK_ID/RANK_SIZE
and TF_CONFIG or RANK_TABLE_FILE on free localhost ports, and this checkout on
PYTHONPATH. All jobs start together when the module's first test needs one (the
machine has 2 cores and most of a job's time is starting TensorFlow), and each
test waits for its own:

* two_ranks: TF_CONFIG, a plain tf.compat.v1.Session, every hccl_ops call, loss
  scaling with an overflow on rank 1 only in step 4, profiling from the env vars;
* three_ranks: RANK_TABLE_FILE, MonitoredTrainingSession with the broadcast hook, profiling;
* estimator: RANK_TABLE_FILE, NPUEstimator with NPURunConfig(profiling_config=...);
* killed: rank 1 dies (SIGKILL) in step 5; rank 0 must stop within HCCL_EXEC_TIMEOUT;
* never_started: rank 1 of 2 is never started; rank 0 must stop within HCCL_CONNECT_TIMEOUT.

Each rank trains linear regression on its own data from its own initial weights;
the test replays the job in NumPy: rank 0's weights, then gradient descent on the
mean of the ranks' gradients.
"""
from __future__ import annotations

import csv
import importlib.util
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterator

import numpy as np
import pytest

from npu_tf_profiling.cli import main as cli_main
from tests.helpers.multi_worker_jobs import SAMPLE

REPO = Path(__file__).resolve().parents[1]
WORKER = REPO / "tests" / "scripts" / "rank_worker.py"
STEPS = 10
OVERFLOW_STEP = 4
KILL_AT_STEP = 5
KILLED_EXEC_TIMEOUT_S = 8
NEVER_STARTED_CONNECT_TIMEOUT_S = 3
JOB_TIMEOUT_S = 150
pytestmark = pytest.mark.timeout(240)


def _load_worker_module():
    spec = importlib.util.spec_from_file_location("rank_worker", WORKER)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


rank_worker = _load_worker_module()  # the data and initial weights the workers use


@dataclass
class Job:
    out: Path
    procs: dict[int, subprocess.Popen]
    started: float
    ended: dict[int, float] = field(default_factory=dict)

    def wait(self) -> dict[int, int]:
        deadline = self.started + JOB_TIMEOUT_S
        while len(self.ended) < len(self.procs) and time.monotonic() < deadline:
            for rank, proc in self.procs.items():
                if rank not in self.ended and proc.poll() is not None:
                    self.ended[rank] = time.monotonic()
            time.sleep(0.05)
        self.stop()
        return {rank: proc.returncode for rank, proc in self.procs.items()}

    def stop(self) -> None:
        for proc in self.procs.values():
            if proc.poll() is None:
                proc.kill()
                proc.wait()

    def log(self, rank: int) -> str:
        return (self.out / f"rank_{rank}.log").read_text(errors="replace")

    def result(self, rank: int) -> dict[str, np.ndarray]:
        with np.load(self.out / f"rank_{rank}.npz") as data:
            return {k: data[k] for k in data.files}


def _tf_config_envs(ports: list[int]) -> list[dict[str, str]]:
    cluster = {"worker": [f"localhost:{p}" for p in ports]}
    return [{"TF_CONFIG": json.dumps({"cluster": cluster, "task": {"type": "worker", "index": r}})} for r in range(len(ports))]


def _rank_table_envs(out: Path, ports: list[int]) -> list[dict[str, str]]:
    table = {
        "version": "1.0", "status": "completed", "server_count": "1",
        "server_list": [{
            "server_id": "127.0.0.1", "host_nic_ip": "reserve",
            "device": [{"device_id": str(r), "device_ip": f"192.168.100.{101 + r}", "rank_id": str(r)} for r in range(len(ports))],
        }],
    }
    path = out / "rank_table.json"
    path.write_text(json.dumps(table))
    return [{"RANK_TABLE_FILE": str(path), "HCCL_IF_BASE_PORT": str(ports[0])} for _ in ports]


def _start(out: Path, rank_envs: list[dict[str, str]], args: list[str], ranks: list[int] | None = None,
           extra_env: dict[str, str] | None = None) -> Job:
    out.mkdir(parents=True, exist_ok=True)
    base = {k: v for k, v in os.environ.items()
            if k not in ("TF_CONFIG", "RANK_TABLE_FILE", "RANK_ID", "RANK_SIZE", "DEVICE_ID", "PROFILING_MODE",
                         "PROFILING_OPTIONS", "PROFILING_DYNAMIC_CONFIG") and not k.startswith("HCCL_")}
    base.update(PYTHONPATH=str(REPO), TF_CPP_MIN_LOG_LEVEL="2", RANK_SIZE=str(len(rank_envs)),
                HCCL_CONNECT_TIMEOUT="90", HCCL_EXEC_TIMEOUT="90")
    base.update(extra_env or {})
    procs = {}
    for rank in ranks if ranks is not None else range(len(rank_envs)):
        env = dict(base, RANK_ID=str(rank), **rank_envs[rank])
        with open(out / f"rank_{rank}.log", "wb") as log:
            procs[rank] = subprocess.Popen([sys.executable, str(WORKER), "--out", str(out), "--steps", str(STEPS), *args],
                                           env=env, stdout=log, stderr=subprocess.STDOUT)
    return Job(out, procs, time.monotonic())


def _profiling_env(out: Path) -> dict[str, str]:
    return {"PROFILING_MODE": "true", "PROFILING_OPTIONS": json.dumps({"output": str(out / "prof"), "training_trace": "on"})}


@pytest.fixture(scope="module")
def jobs(tmp_path_factory) -> Iterator[dict[str, Job]]:
    root = tmp_path_factory.mktemp("ranks")
    two, three, est, killed, never = (root / n for n in ("two_ranks", "three_ranks", "estimator", "killed", "never_started"))
    for folder in (two, three, est, killed, never):
        folder.mkdir()
    ports = SAMPLE.free_ports(11)  # one draw, so the five jobs' ports differ
    ports2, ports3, ports_est, ports_killed, ports_never = ports[0:2], ports[2:5], ports[5:7], ports[7:9], ports[9:11]
    started = {
        "two_ranks": _start(two, _tf_config_envs(ports2), [
            "--api", "session", "--collectives", "--loss-scale", "--overflow-rank", "1", "--overflow-step", str(OVERFLOW_STEP),
        ], extra_env=_profiling_env(two)),
        "three_ranks": _start(three, _rank_table_envs(three, ports3), ["--api", "monitored", "--collectives"],
                              extra_env=_profiling_env(three)),
        "estimator": _start(est, _rank_table_envs(est, ports_est), ["--api", "estimator", "--profile-output", str(est / "prof")]),
        "killed": _start(killed, _tf_config_envs(ports_killed),
                         ["--api", "session", "--kill-rank", "1", "--kill-at-step", str(KILL_AT_STEP)],
                         extra_env={**_profiling_env(killed), "HCCL_EXEC_TIMEOUT": str(KILLED_EXEC_TIMEOUT_S)}),
        "never_started": _start(never, _tf_config_envs(ports_never), ["--api", "session"], ranks=[0],
                                extra_env={"HCCL_CONNECT_TIMEOUT": str(NEVER_STARTED_CONNECT_TIMEOUT_S)}),
    }
    yield started
    for job in started.values():
        job.stop()


def _finished(job: Job) -> Job:
    codes = job.wait()
    assert all(code == 0 for code in codes.values()), "\n".join(f"--- rank {r} (exit {c}):\n{job.log(r)[-3000:]}" for r, c in codes.items())
    return job


# ----------------------------------------------------------------------------- the NumPy replay
def replay(ranks: int, steps: int, skipped_steps: tuple[int, ...] = ()) -> tuple[np.ndarray, np.ndarray]:
    """Rank 0's initial weights, then gradient descent on the mean over ranks of each rank's batch gradient."""
    weights, bias = (a.astype(np.float64) for a in rank_worker.rank_initial_weights(0))
    data = [rank_worker.rank_data(r) for r in range(ranks)]
    batches = len(data[0][0]) // rank_worker.BATCH
    for step in range(1, steps + 1):
        if step in skipped_steps:
            continue
        start = ((step - 1) % batches) * rank_worker.BATCH
        grads_w, grads_b = [], []
        for x, y in data:
            end = start + rank_worker.BATCH
            xb, yb = x[start:end].astype(np.float64), y[start:end].astype(np.float64)
            residual = xb @ weights + bias - yb
            grads_w.append(2.0 * xb.T @ residual / residual.size)
            grads_b.append(2.0 * residual.sum(axis=0) / residual.size)
        weights = weights - rank_worker.LEARNING_RATE * np.mean(grads_w, axis=0)
        bias = bias - rank_worker.LEARNING_RATE * np.mean(grads_b, axis=0)
    return weights, bias


def assert_trained_like_replay(job: Job, ranks: int, skipped_steps: tuple[int, ...] = ()) -> None:
    results = [job.result(r) for r in range(ranks)]
    rank0_w, rank0_b = rank_worker.rank_initial_weights(0)
    assert not np.allclose(results[1]["init_weights"], rank0_w)  # the ranks really started apart
    for r in results:
        np.testing.assert_array_equal(r["start_weights"], rank0_w)  # after the broadcast: rank 0's weights
        np.testing.assert_array_equal(r["start_bias"], rank0_b)
    expected_w, expected_b = replay(ranks, STEPS, skipped_steps)
    for r in results:
        np.testing.assert_allclose(r["end_weights"], expected_w, rtol=1e-4)
        np.testing.assert_allclose(r["end_bias"], expected_b, rtol=1e-4)
        np.testing.assert_array_equal(r["end_weights"], results[0]["end_weights"])  # identical bytes on every rank
        assert int(r["end_global_step"]) == STEPS - len(skipped_steps)


def assert_collectives(job: Job, ranks: int) -> None:
    mine = [np.array([r + 1.0, 10.0 - r, 2.0], np.float32) for r in range(ranks)]
    ints = [np.array([[r, -r], [3 * r, 7]], np.int32) for r in range(ranks)]
    for rank in range(ranks):
        got = job.result(rank)
        np.testing.assert_array_equal(got["check_sum"], np.sum(mine, axis=0))
        np.testing.assert_array_equal(got["check_max"], np.max(mine, axis=0))
        np.testing.assert_array_equal(got["check_min"], np.min(ints, axis=0))
        assert got["check_min"].dtype == np.int32
        np.testing.assert_allclose(got["check_prod"], np.prod(mine, axis=0), rtol=1e-6)
        np.testing.assert_array_equal(got["check_broadcast_from_last"], ints[-1])
        np.testing.assert_array_equal(got["check_broadcast_one"], mine[0] * 2)
        np.testing.assert_array_equal(got["check_allgather"], np.stack(mine))
        np.testing.assert_array_equal(got["check_reduce_scatter"], np.full([2], sum(r + 1.0 for r in range(ranks))))
        assert bool(got["check_overflow_one_rank"]) is True and bool(got["check_overflow_none"]) is False


def step_trace_rows(prof_root: Path) -> dict[int, list[dict[str, str]]]:
    """rank -> its step_trace rows; each rank wrote exactly one PROF_* folder holding only its device_<rank>."""
    rows = {}
    for prof in sorted(prof_root.glob("PROF_*")):
        (device,) = prof.glob("device_*")
        (path,) = (prof / "mindstudio_profiler_output").glob("step_trace_*.csv")
        with open(path, newline="") as handle:
            rows[int(device.name.split("_")[1])] = list(csv.DictReader(handle))
    return rows


def assert_profiled_with_reduce(prof_root: Path, ranks: int, steps: int, capsys) -> None:
    rows = step_trace_rows(prof_root)
    assert sorted(rows) == list(range(ranks))
    for rank, table in rows.items():
        assert len(table) == steps, (rank, len(table))
        filled = [r for r in table if r.get("Reduce Start(us)", "N/A") != "N/A" and r["Reduce Duration(us)"] != "N/A"]
        assert len(filled) >= 0.9 * len(table), (rank, table[:2])
    assert cli_main(["cluster", str(prof_root)]) == 0
    printed = capsys.readouterr().out
    assert f"Cluster: {ranks} rank(s) with data" in printed and "Missing steps: none" in printed


# ----------------------------------------------------------------------------- 2 ranks, TF_CONFIG, plain Session
def test_two_ranks_start_from_rank0_and_every_rank_skips_the_step_one_rank_overflowed(jobs):
    job = _finished(jobs["two_ranks"])
    assert_trained_like_replay(job, 2, skipped_steps=(OVERFLOW_STEP,))  # global step 9 of 10 on every rank
    scales = [float(job.result(r)["end_loss_scale"]) for r in range(2)]
    assert scales == [512.0, 512.0]  # 1024 halved once, on both ranks, though only rank 1 overflowed


def test_two_ranks_hccl_ops_values(jobs):
    assert_collectives(_finished(jobs["two_ranks"]), 2)


def test_two_ranks_profiled_per_rank_with_reduce_columns(jobs, capsys):
    job = _finished(jobs["two_ranks"])
    assert_profiled_with_reduce(job.out / "prof", 2, STEPS, capsys)


# ----------------------------------------------------------------------------- 3 ranks, rank table, MonitoredTrainingSession
def test_three_ranks_rank_table_monitored_session(jobs, capsys):
    job = _finished(jobs["three_ranks"])
    assert_trained_like_replay(job, 3)
    assert_collectives(job, 3)
    assert [int(job.result(r)["local_rank_id"]) for r in range(3)] == [0, 1, 2]
    assert {int(job.result(r)["local_rank_size"]) for r in range(3)} == {3}
    assert_profiled_with_reduce(job.out / "prof", 3, STEPS, capsys)


# ----------------------------------------------------------------------------- 2 ranks, Estimator
def test_estimator_with_npu_run_config(jobs, capsys):
    job = _finished(jobs["estimator"])
    assert_trained_like_replay(job, 2)
    assert_profiled_with_reduce(job.out / "prof", 2, STEPS, capsys)


# ----------------------------------------------------------------------------- failures
def test_killed_rank_stops_the_survivor_in_time_and_the_cluster_report_names_it(jobs, capsys):
    job = jobs["killed"]
    codes = job.wait()
    assert codes[1] == -9, job.log(1)[-2000:]
    assert codes[0] != 0, job.log(0)[-2000:]
    waited = job.ended[0] - job.ended[1]
    assert waited < KILLED_EXEC_TIMEOUT_S + 15, waited  # the collective's timeout, the diagnosis, the exit
    log = job.log(0)
    assert "RankFailureError" in log and "rank 1 (localhost:" in log and "is gone" in log, log[-3000:]
    assert cli_main(["cluster", str(job.out / "prof")]) == 0
    printed = capsys.readouterr().out
    assert "rank 1: 1 step(s) missing: 5" in printed, printed


def test_never_started_rank_is_named_within_the_connect_timeout(jobs):
    job = jobs["never_started"]
    codes = job.wait()
    assert codes[0] != 0
    log = job.log(0)
    assert "rank 1 (localhost:" in log and f"did not come up within HCCL_CONNECT_TIMEOUT={NEVER_STARTED_CONNECT_TIMEOUT_S} s" in log, log[-3000:]
