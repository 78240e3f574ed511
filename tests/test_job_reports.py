"""The training process's own reports are bounded (issue 39): a long run's job writes none, says so in one line,
and ``npu-tf-prof report`` builds them afterwards from the same raw data."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from npu_tf_profiling.cli import main
from npu_tf_profiling.raw_format import layout
from npu_tf_profiling.reports.job_reports import JOB_REPORT_MAX_ITERATIONS, count_iteration_records
from tests.helpers.trace_files import only_prof_dir, step_trace_rows

SCRIPT = Path(__file__).parent / "scripts" / "many_steps.py"


def test_a_long_real_job_leaves_its_reports_to_the_report_command(tmp_path, capsys) -> None:
    steps = JOB_REPORT_MAX_ITERATIONS + 20
    env = {k: v for k, v in os.environ.items() if not k.startswith("PROFILING_")}
    env.update({"PROFILING_MODE": "true", "PROFILING_OPTIONS": json.dumps({"output": str(tmp_path), "training_trace": "on"})})
    done = subprocess.run([sys.executable, str(SCRIPT), str(steps)], env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    prof = only_prof_dir(tmp_path)
    said = [line for line in done.stderr.splitlines() if "npu-tf-prof report" in line]
    assert len(said) == 1, done.stderr[-3000:]  # one line, though the session's close and the exit both report
    assert f"{steps} iterations recorded" in said[0] and str(prof) in said[0]
    assert not layout.report_dir(prof).exists() or not any(layout.report_dir(prof).iterdir())  # nothing built in the job
    assert count_iteration_records(prof) == steps

    assert main(["report", str(prof)]) == 0
    capsys.readouterr()
    _, rows = step_trace_rows(tmp_path)
    assert [r["Iteration ID"] for r in rows] == [str(i) for i in range(1, steps + 1)]
