"""`npu-tf-prof watch` at its edges, on PROF folders written by hand (no TensorFlow): a job that closes,
a job that is killed, no job yet, a missing path. Following a real training is in tests/test_anomaly_capture.py."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

from npu_tf_profiling.cli import main
from npu_tf_profiling.exit_codes import EXIT_BAD_INPUT, EXIT_JOB_KILLED, EXIT_NOT_FOUND, EXIT_OK
from npu_tf_profiling.raw_format import layout
from npu_tf_profiling.reports.commands import watch


def _job_folder(output: Path, pid: int) -> Path:
    device = output / "PROF_1_20260101000000_ABCDEFGH" / "device_0"
    (device / layout.DATA_DIR).mkdir(parents=True)
    (device / layout.INFO_FILE).write_text(json.dumps({"pid": pid, "host": socket.gethostname()}))
    return device


def _after_reads(monkeypatch, reads: int, action) -> None:
    """Do `action` once watch has read the folder's state `reads` times (the job ends while it is followed)."""
    original, count = watch._state, [0]

    def state(device_dir: Path):
        count[0] += 1
        if count[0] == reads:
            action()
        return original(device_dir)

    monkeypatch.setattr(watch, "_state", state)


def test_watch_ends_with_the_job_or_says_it_was_killed(tmp_path: Path, capsys, monkeypatch) -> None:
    # Closed: the folder's info.json gets closed_us while watch follows it.
    device = _job_folder(tmp_path / "closed", os.getpid())
    _after_reads(monkeypatch, 3, lambda: (device / layout.INFO_FILE).write_text(
        json.dumps({"pid": os.getpid(), "host": socket.gethostname(), layout.K_CLOSED: 1})))
    assert main(["watch", str(tmp_path / "closed"), "--interval", "0.2", "--wait", "5"]) == EXIT_OK
    out = capsys.readouterr().out.splitlines()
    assert out[0].startswith("[") and " 1/1 running: 0 iterations" in out[0]
    assert out[-1] == "job finished: 1 device folder(s) closed"
    # Killed: the writer process dies without closing its folder.
    writer = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    _job_folder(tmp_path / "killed", writer.pid)
    _after_reads(monkeypatch, 3, lambda: (writer.kill(), writer.wait()))
    assert main(["watch", str(tmp_path / "killed"), "--interval", "0.2", "--wait", "5"]) == EXIT_JOB_KILLED
    assert capsys.readouterr().out.splitlines()[-1].startswith("job killed: 1 of 1 device folder(s) never closed")


def test_watch_without_a_job_waits_then_exits_3_and_a_missing_path_is_2(tmp_path: Path, capsys) -> None:
    started = time.monotonic()
    assert main(["watch", str(tmp_path), "--wait", "0.5", "--interval", "0.2"]) == EXIT_NOT_FOUND
    assert 0.5 <= time.monotonic() - started < 5
    assert "no running job appeared" in capsys.readouterr().err
    assert main(["watch", str(tmp_path / "absent")]) == EXIT_BAD_INPUT
    assert "no such folder" in capsys.readouterr().err
