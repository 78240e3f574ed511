"""The fault matrix (docs/troubleshooting.md, "What profiling does when things go wrong"): each fault, the job finishes, nothing written is lost.

The full disk and SIGKILL rows are in test_runtime_robustness.py. Faults done
to the output by "someone else" are done by the job script itself between two
steps (tests/scripts/faulty_job.py), so they land at a known step.
"""
from __future__ import annotations

import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import warnings
from pathlib import Path

import pytest
import tensorflow.compat.v1 as tf

from npu_tf_profiling.cli import main as cli_main
from npu_tf_profiling.config.session_proto import write_request
from npu_tf_profiling.raw_format import append_writer
from npu_tf_profiling.raw_format import layout
from npu_tf_profiling.raw_format.append_writer import AppendOnlyWriter, StorageBudget
from npu_tf_profiling.runtime import profiling_run
from tests.helpers.models import session_mlp
from npu_tf_profiling.raw_format.training_frame import HEADER_SIZE, Frame, decode_frames
from tests.test_runtime_robustness import assert_at_most_a_second_lost, profiling_env, train_then_signal
from tests.helpers.trace_files import assert_step_trace_formulas, frame_records, only_prof_dir, raw_records, step_trace_rows

SCRIPTS = Path(__file__).parent / "scripts"
FAULTY_JOB = SCRIPTS / "faulty_job.py"

pytestmark = pytest.mark.filterwarnings("ignore:.*is deprecated:UserWarning")


def run_job(output: Path, *args: str, prefix: tuple[str, ...] = ()) -> subprocess.CompletedProcess:
    return subprocess.run([*prefix, sys.executable, str(FAULTY_JOB), *args], env=profiling_env(output),
                          capture_output=True, text=True, timeout=180)


def ids(rows: list[dict[str, str]]) -> list[int]:
    return [int(r["Iteration ID"]) for r in rows]


def rebuild_reports(output: Path) -> list[dict[str, str]]:
    prof = only_prof_dir(output)
    shutil.rmtree(prof / layout.REPORT_DIR, ignore_errors=True)
    assert cli_main(["report", str(prof)]) == 0
    return step_trace_rows(output)[1]


# ----- the output folder deleted, or made read-only, while the job runs ---------------------------------------
def test_output_deleted_mid_run_is_written_again_with_everything(tmp_path: Path) -> None:
    done = run_job(tmp_path, "30", "delete_output", "10")
    assert done.returncode == 0 and done.stdout.endswith("done\n"), done.stderr
    assert "was deleted while the job ran" in done.stderr and "Training continues" in done.stderr
    prof = only_prof_dir(tmp_path)
    assert (prof / "device_0" / layout.INFO_FILE).is_file()  # metadata written again too
    _, rows = step_trace_rows(tmp_path)  # the reports of the job's own close
    assert ids(rows) == list(range(1, 31))  # the 10 iterations recorded before the deletion are back
    assert_step_trace_formulas(rows)


def test_a_deleted_file_is_noticed_while_recording(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(append_writer, "DELETION_CHECK_INTERVAL_S", 0.0)  # check on every append
    path = tmp_path / "out" / "data" / "t.jsonl"
    writer = AppendOnlyWriter(path, StorageBudget(None))
    recreated: list[bool] = []
    writer.on_recreated = lambda: recreated.append(True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for i in range(3):
            assert writer.append(f"{i}\n".encode())
        shutil.rmtree(tmp_path / "out")
        assert writer.append(b"3\n")  # goes to the unnamed file, then...
        assert writer.append(b"4\n")  # ...is noticed here
    assert path.read_text() == "0\n1\n2\n3\n4\n" and recreated == [True]
    assert sum("was deleted while the job ran" in str(w.message) for w in caught) == 1
    writer.close()
    assert path.read_text() == "0\n1\n2\n3\n4\n"


def _read_only_prefix() -> tuple[str, ...]:
    """Root ignores permissions; without CAP_DAC_OVERRIDE it obeys them like any user."""
    if os.geteuid() != 0:
        return ()
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root without setpriv: a read-only folder cannot be simulated")
    return (setpriv, "--bounding-set=-dac_override,-dac_read_search")


def test_output_made_read_only_mid_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    output = tmp_path / "out"
    done = run_job(output, "30", "read_only", "10", prefix=_read_only_prefix())
    try:
        assert done.returncode == 0 and done.stdout.endswith("done\n"), done.stderr
        # The open raw file keeps taking records; only the reports cannot be written, said once.
        assert done.stderr.count("could not build reports") == 1, done.stderr
        assert "npu-tf-prof report" in done.stderr
        assert [r["run"] for r in raw_records(output)] == list(range(1, 31))
        assert cli_main(["summary", str(output)]) == 0  # reading needs no write access
        assert "30 iterations" in capsys.readouterr().out
    finally:
        for folder, _, files in os.walk(output):
            os.chmod(folder, stat.S_IRWXU)
            for name in files:
                os.chmod(os.path.join(folder, name), stat.S_IRUSR | stat.S_IWUSR)
    assert ids(rebuild_reports(output)) == list(range(1, 31))


# ----- storage_limit --------------------------------------------------------------------------------------------
def test_storage_limit_reached_mid_run(tmp_path: Path) -> None:
    graph = tf.Graph()
    train_op, loss, init_op, _ = session_mlp(graph)
    config = tf.ConfigProto()
    write_request(config, True, json.dumps({"output": str(tmp_path), "training_trace": "on", "storage_limit": "200MB"}))
    losses = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with tf.Session(graph=graph, config=config) as sess:
            run = profiling_run._RUNS[tmp_path.resolve()]
            # 200 MB is the smallest limit upstream accepts: start with all but ~5 records (60 bytes each) of it used.
            run._budget.used_bytes = run._budget.limit_bytes - 5 * 60
            sess.run(init_op)
            for _ in range(20):
                losses.append(sess.run([train_op, loss])[1])
    assert len(losses) == 20  # training went on
    stopped = [w for w in caught if "storage_limit reached" in str(w.message)]
    assert len(stopped) == 1 and "Training continues" in str(stopped[0].message)
    records = raw_records(tmp_path)
    assert 1 <= len(records) < 20 and [r["run"] for r in records] == list(range(1, len(records) + 1))
    assert ids(step_trace_rows(tmp_path)[1]) == list(range(1, len(records) + 1))


# ----- signals ------------------------------------------------------------------------------------------------------
@pytest.mark.timing
def test_sigterm_mid_run_loses_at_most_a_second_of_iterations(tmp_path: Path) -> None:
    seen, signalled_at, status = train_then_signal(tmp_path, signal.SIGTERM)
    assert status == -signal.SIGTERM  # the job ends as it would without profiling
    assert_at_most_a_second_lost(tmp_path, seen, signalled_at)


# ----- damaged raw files ----------------------------------------------------------------------------------------
def test_corrupt_and_truncated_raw_files_are_reported_by_place_and_the_rest_analysed(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The job's graph is finalized before its session exists (as MonitoredSession leaves it): profiled all the same."""
    graph = tf.Graph()
    train_op, _, init_op, _ = session_mlp(graph)
    graph.finalize()
    config = tf.ConfigProto()
    write_request(config, True, json.dumps({"output": str(tmp_path), "training_trace": "on", "task_trace": "on",
                                            "start_step": 3, "stop_step": 6}))
    with tf.Session(graph=graph, config=config) as sess:
        sess.run(init_op)
        for _ in range(12):
            sess.run(train_op)
    assert graph.finalized  # the probes went in, and the graph is finalized again, as the script left it
    whole = step_trace_rows(tmp_path)[1]  # the reports of the session's close, before any damage
    assert ids(whole) == list(range(1, 13))
    assert_step_trace_formulas(whole)
    prof = only_prof_dir(tmp_path)
    data = prof / "device_0" / layout.DATA_DIR
    raw = bytearray((data / layout.TRAINING_FRAMES_FILE).read_bytes())
    frames = [f for f in decode_frames(bytes(raw)) if isinstance(f, Frame)]
    assert [r["run"] for r in frame_records(bytes(raw))] == list(range(1, 13)) and len(frames) >= 2
    damaged = frames[0]  # a bit flipped inside its rows: the frame's checksum shows it
    raw[damaged.offset + HEADER_SIZE + 3] ^= 0xFF
    (data / layout.TRAINING_FRAMES_FILE).write_bytes(bytes(raw[:-5]))  # the last record cut mid-write
    tasks = (data / layout.TASK_TRACE_FILE).read_bytes()
    (data / layout.TASK_TRACE_FILE).write_bytes(tasks[: len(tasks) - 100])  # the last traced iteration torn
    capsys.readouterr()
    rows = rebuild_reports(tmp_path)
    err = capsys.readouterr().err
    left_out = len(damaged.rows)
    assert f"record 1: frame damaged (checksum mismatch): its {left_out} record(s) left out" in err
    assert "record 12: incomplete last frame" in err
    assert "incomplete last record" in err
    assert ids(rows) == list(range(left_out + 1, 12))
    task_csv = next((prof / layout.REPORT_DIR).glob("task_time_*.csv")).read_text().splitlines()
    traced = {int(line.split(",")[2]) for line in task_csv[1:]}
    assert traced == {3, 4, 5}  # iteration 6's record was torn; the others are whole


# ----- two jobs, one output -----------------------------------------------------------------------------------------
def test_two_processes_on_one_output(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Also: `tf.config.run_functions_eagerly(True)` in a graph-mode job (the 25-step one) changes nothing."""
    jobs = [subprocess.Popen([sys.executable, str(FAULTY_JOB), str(steps), fault], env=profiling_env(tmp_path),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for steps, fault in ((20, "none"), (25, "eager_functions"))]
    for job in jobs:
        out, err = job.communicate(timeout=180)
        assert job.returncode == 0 and out.endswith("done\n"), err
    profs = sorted(tmp_path.glob("PROF_*"))
    assert len(profs) == 2  # one folder per process, never one file written by two
    counts = sorted(len(frame_records((p / "device_0" / layout.DATA_DIR / layout.TRAINING_FRAMES_FILE).read_bytes()))
                    for p in profs)
    assert counts == [20, 25]
    assert sorted(ids(step_trace_rows(tmp_path, prof)[1]) for prof in profs) == [list(range(1, 21)), list(range(1, 26))]
    assert cli_main(["summary", str(tmp_path)]) == 0
    assert capsys.readouterr().out.count("Device 0, Model ID 1:") == 2
    assert cli_main(["cluster", str(tmp_path), "--no-tasks"]) == 2  # not two ranks of one job: said, not merged
    assert "several folders claim the same rank" in capsys.readouterr().err


# ----- modes ----------------------------------------------------------------------------------------------------------
def test_steps_run_eagerly_are_not_profiled_and_say_so(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, str(SCRIPTS / "eager_fit.py")], env=profiling_env(tmp_path),
                          capture_output=True, text=True, timeout=180)
    assert done.returncode == 0 and done.stdout.endswith("done\n"), done.stderr
    assert "PROFILING_MODE=true, but no training step ran in a tf.compat.v1 Session or a traced tf.function" in done.stderr
    assert not list(tmp_path.glob("PROF_*"))
