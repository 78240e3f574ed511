"""Profiling never hurts the job: SIGKILL recovery, a full disk, and the env-var path in a fresh process."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from npu_tf_profiling.cli import main as cli_main
from npu_tf_profiling.raw_format.append_writer import AppendOnlyWriter, StorageBudget
from tests.helpers.trace_files import assert_step_trace_formulas, only_prof_dir, step_trace_rows

SCRIPT = Path(__file__).parent / "scripts" / "train_forever.py"


def profiling_env(output: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PROFILING_")}
    env.update(PROFILING_MODE="true", PROFILING_OPTIONS=json.dumps({"output": str(output), "training_trace": "on"}))
    return env


def test_env_path_profiles_an_unmodified_script(tmp_path) -> None:
    done = subprocess.run([sys.executable, str(SCRIPT), "25"], env=profiling_env(tmp_path), capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    _, rows = step_trace_rows(tmp_path)
    assert [r["Iteration ID"] for r in rows] == [str(i) for i in range(1, 26)]
    assert_step_trace_formulas(rows)
    info = json.loads(next(only_prof_dir(tmp_path).glob("device_*/info.json")).read_text())
    assert info["source"] == "env"


# Records are drained from the graph in batches: a SIGKILL may lose at most this much of the latest iterations.
LOSS_BOUND_S = 1.0


def train_then_signal(output: Path, signum: int) -> tuple[list[float], float, int]:
    """Train (paced, ~150 steps a second) for a few seconds, then send `signum`.

    Returns when each "step N" line arrived, when the signal was sent, and the exit status.
    """
    env = profiling_env(output)
    env["STEP_SLEEP_S"] = "0.005"
    proc = subprocess.Popen([sys.executable, str(SCRIPT), "100000"], env=env, stdout=subprocess.PIPE, text=True)
    seen: list[float] = []
    try:
        for line in proc.stdout:  # type: ignore[union-attr]
            if line.startswith("step "):
                seen.append(time.monotonic())
            if len(seen) >= 40 and seen[-1] - seen[0] >= 3 * LOSS_BOUND_S:
                break
    finally:
        signalled_at = time.monotonic()
        proc.send_signal(signum)
        proc.wait(timeout=30)
    return seen, signalled_at, proc.returncode


def assert_at_most_a_second_lost(output: Path, seen: list[float], signalled_at: float) -> None:
    prof = only_prof_dir(output)
    assert not list(prof.glob("mindstudio_profiler_output/*.csv"))  # no exit handler ran: no reports
    assert cli_main(["report", str(prof)]) == 0
    _, rows = step_trace_rows(output)
    settled = sum(1 for at in seen if at < signalled_at - LOSS_BOUND_S)
    assert settled <= len(rows) <= len(seen) + 1, (settled, len(rows), len(seen))
    assert [r["Iteration ID"] for r in rows] == [str(i) for i in range(1, len(rows) + 1)]
    assert_step_trace_formulas(rows)


@pytest.mark.timing  # the loss bound is a time: a second busy process would move it
def test_sigkill_loses_at_most_a_second_of_iterations(tmp_path) -> None:
    seen, killed_at, _ = train_then_signal(tmp_path, signal.SIGKILL)
    assert_at_most_a_second_lost(tmp_path, seen, killed_at)


def test_full_disk_stops_collection_and_training_goes_on(tmp_path) -> None:
    limit = 7_000  # bytes any one file may grow to in the child: info.json fits, the trace soon does not
    done = subprocess.run([sys.executable, str(SCRIPT), "200", str(limit)], env=profiling_env(tmp_path), capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().endswith("done")  # training finished all its steps
    assert "collection stopped" in done.stderr and "Training continues" in done.stderr
    prof = only_prof_dir(tmp_path)
    for stale in prof.glob("mindstudio_profiler_output/*"):
        stale.unlink()  # whatever the limited child managed to write; rebuild from raw data
    assert cli_main(["report", str(prof)]) == 0
    _, rows = step_trace_rows(tmp_path)
    assert 10 < len(rows) < 200
    assert [r["Iteration ID"] for r in rows] == [str(i) for i in range(1, len(rows) + 1)]


def test_storage_limit_stops_the_writer_and_keeps_whole_records(tmp_path) -> None:
    budget = StorageBudget(limit_bytes=1000)
    writer = AppendOnlyWriter(tmp_path / "t.jsonl", budget)
    written = 0
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for i in range(100):
            if writer.append(json.dumps({"model_id": 1, "run": i, "iteration_end": 1.5}).encode() + b"\n"):
                written += 1
    assert 0 < written < 100
    assert budget.used_bytes <= 1000
    lines = (tmp_path / "t.jsonl").read_text().splitlines()
    assert len(lines) == written and all(json.loads(line)["model_id"] == 1 for line in lines)
    assert sum("storage_limit reached (1000 bytes)" in str(w.message) for w in caught) == 1  # warned once


# A Session collected inside an import whose module the reports' writers need (the database writer's
# adbc_driver_sqlite.dbapi): the meta-path finder runs while the import holds that module's lock.
COLLECTED_INSIDE_AN_IMPORT = '''
import gc, os, sys
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np
import tensorflow.compat.v1 as tf

tf.disable_eager_execution()
x = np.random.default_rng(0).normal(size=(64, 8)).astype(np.float32)
w = tf.get_variable("w", [8, 1])
train = tf.train.GradientDescentOptimizer(0.01).minimize(tf.reduce_mean(tf.matmul(tf.constant(x), w) ** 2))
sessions = [tf.Session()]
sessions[0].run(tf.global_variables_initializer())
for _ in range(6):
    sessions[0].run(train)

class CollectWhileImporting:
    def find_spec(self, name, path=None, target=None):
        if name == "adbc_driver_sqlite.dbapi" and sessions:
            sessions.clear()
            gc.collect()  # the Session's __del__, with this module's import lock held
        return None

sys.meta_path.insert(0, CollectWhileImporting())
import adbc_driver_sqlite.dbapi  # noqa: F401
reports = [p for p in os.listdir(sys.argv[1]) if p.startswith("PROF_")]
print("reports before the exit:", any(os.path.isdir(os.path.join(sys.argv[1], p, "mindstudio_profiler_output")) for p in reports))
'''


def test_a_session_collected_inside_an_import_writes_its_reports_at_the_exit(tmp_path) -> None:
    """Its reports' writers would import the module being imported, and the finalizer would join them: a hang
    (runtime/session/finalizer.py). Now the finalizer only closes, and the exit writes the reports."""
    pytest.importorskip("adbc_driver_sqlite.dbapi")  # the database writer's fast route, which imports it lazily
    script = tmp_path / "collected.py"
    script.write_text(COLLECTED_INSIDE_AN_IMPORT)
    done = subprocess.run([sys.executable, str(script), str(tmp_path / "out")], env=profiling_env(tmp_path / "out"),
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "reports before the exit: False" in done.stdout, done.stdout
    _, rows = step_trace_rows(tmp_path / "out")
    assert len(rows) == 6
