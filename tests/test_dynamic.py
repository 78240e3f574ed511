"""PROFILING_MODE=dynamic: a running job picks up edits of its config file (as torch_npu's dynamic_profile)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.helpers.trace_files import only_prof_dir, step_trace_rows

SCRIPT = Path(__file__).parent / "scripts" / "train_forever.py"


def _wait_for(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")


class StepReader:
    """Reads the child's `step N` lines without blocking the test."""

    def __init__(self, proc: subprocess.Popen) -> None:
        import threading

        self.step = 0
        self._thread = threading.Thread(target=self._read, args=(proc,), daemon=True)
        self._thread.start()

    def _read(self, proc: subprocess.Popen) -> None:
        for line in proc.stdout:  # type: ignore[union-attr]
            if line.startswith("step "):
                self.step = int(line.split()[1])


@pytest.mark.timeout(120)
def test_dynamic_config_edit_starts_a_collection(tmp_path) -> None:
    config = tmp_path / "cfg" / "profiler_config.json"
    output = tmp_path / "out"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PROFILING_")}
    env.update(PROFILING_MODE="dynamic", PROFILING_DYNAMIC_CONFIG=str(config), STEP_SLEEP_S="0.05")
    proc = subprocess.Popen([sys.executable, str(SCRIPT), "100000"], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        reader = StepReader(proc)
        _wait_for(lambda: reader.step >= 5, 60, "the job to train")
        template = json.loads(config.read_text())
        assert "start_step" not in template and template["training_trace"] == "on"  # a template that collects nothing
        logs = list((config.parent / "log").glob("monitor_dp_*_rank_0.log"))
        assert len(logs) == 1

        config.write_text('{"output": "/tmp", "training_trace": "on",')  # an invalid edit
        _wait_for(lambda: "invalid config ignored" in logs[0].read_text(), 10, "the invalid edit to be logged")
        assert "line 1 column" in logs[0].read_text()
        assert proc.poll() is None  # the job goes on

        start = reader.step + 60  # ~3 s ahead: well after the next 2 s poll
        config.write_text(json.dumps({"output": str(output), "training_trace": "on", "start_step": start, "stop_step": start + 4}))
        _wait_for(lambda: "collection done" in logs[0].read_text(), 60, "the collection to finish")
        assert proc.poll() is None
    finally:
        proc.kill()
        proc.wait(timeout=30)
    _, rows = step_trace_rows(output)
    assert [int(r["Iteration ID"]) for r in rows] == list(range(start, start + 5))
    info = json.loads(next(only_prof_dir(output).glob("device_*/info.json")).read_text())
    assert info["source"] == "dynamic"


def test_dynamic_mode_without_config_path_is_an_error() -> None:
    from npu_tf_profiling.config import ProfilingOptionsError
    from npu_tf_profiling.runtime.dynamic import dynamic_config_path

    with pytest.raises(ProfilingOptionsError, match="PROFILING_DYNAMIC_CONFIG"):
        dynamic_config_path({"PROFILING_MODE": "dynamic"})
    assert dynamic_config_path({"PROFILING_MODE": "true"}) is None


def test_dynamic_state_machine_queues_a_config_edited_during_a_collection(tmp_path) -> None:
    """IDLE -> COLLECTING -> QUEUED (edit during the window) -> COLLECTING (the queued one) -> IDLE."""
    from npu_tf_profiling.runtime.dynamic import DynamicController, DynamicState

    config = tmp_path / "profiler_config.json"
    controller = DynamicController(config, poll_interval_s=0.0)
    assert controller.state is DynamicState.IDLE and controller.poll() is None  # the template has no window

    def edit(start: int, stop: int, mtime_ns: int) -> None:
        config.write_text(json.dumps({"output": str(tmp_path / "out"), "training_trace": "on", "start_step": start, "stop_step": stop}))
        os.utime(config, ns=(mtime_ns, mtime_ns))  # a distinct mtime per edit, however fast the test runs

    edit(5, 6, 10**18)
    first = controller.poll()
    assert controller.state is DynamicState.COLLECTING and first is not None and first.window.start_step == 5
    edit(20, 21, 2 * 10**18)
    assert controller.poll() is first and controller.state is DynamicState.QUEUED
    controller.after_iteration(5)
    assert controller.state is DynamicState.QUEUED  # window not over yet
    controller.after_iteration(6)
    second = controller.poll()
    assert controller.state is DynamicState.COLLECTING and second is not first and second.window.start_step == 20
    controller.after_iteration(21)
    assert controller.state is DynamicState.IDLE and controller.poll() is None
    log = next((tmp_path / "log").glob("monitor_dp_*.log")).read_text()
    assert log.count("collection done") == 2 and "starts when it ends" in log
