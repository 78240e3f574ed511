"""`npu-tf-prof report` / `summary`: outputs and exit codes (0 ok, 2 bad input, 3 nothing found)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from npu_tf_profiling.cli import main
from tests.helpers.raw_fixtures import PROF_TS, Phases, iterations, jsonl, make_prof_dir, read_csv

from tests.helpers.no_tensorflow import REPO, run_without_tensorflow


def test_report_writes_and_prints_paths(tmp_path, capsys):
    prof = make_prof_dir(tmp_path, {0: iterations(4)})
    assert main(["report", str(prof)]) == 0
    out = capsys.readouterr().out.split()
    assert [Path(p).name for p in out] == [f"step_trace_{PROF_TS}.csv", f"step_trace_{PROF_TS}.json"]
    assert all(Path(p).is_file() for p in out)
    assert len(read_csv(Path(out[0]))[1]) == 4


def test_report_on_an_output_folder_reports_each_prof_dir(tmp_path, capsys):
    make_prof_dir(tmp_path, {0: iterations(2)}, pid=1)
    make_prof_dir(tmp_path, {0: iterations(3)}, pid=2, ts="20240102030406")
    assert main(["report", str(tmp_path)]) == 0
    out = capsys.readouterr().out.split()
    assert len(out) == 4
    assert sorted(len(read_csv(Path(p))[1]) for p in out if p.endswith(".csv")) == [2, 3]


def test_report_timestamp_option(tmp_path, capsys):
    prof = make_prof_dir(tmp_path, {0: iterations(1)})
    assert main(["report", str(prof), "--timestamp", "20300101120000"]) == 0
    assert "step_trace_20300101120000.csv" in capsys.readouterr().out
    assert main(["report", str(prof), "--timestamp", "tomorrow"]) == 2
    assert "YYYYmmddHHMMSS" in capsys.readouterr().err


@pytest.mark.parametrize("command", ["report", "summary"])
def test_missing_path_is_bad_input(tmp_path, capsys, command):
    assert main([command, str(tmp_path / "nope")]) == 2
    assert "no such folder" in capsys.readouterr().err


@pytest.mark.parametrize("command", ["report", "summary", "cluster"])
@pytest.mark.parametrize("content", ["empty", "other folders"])
def test_folder_without_prof_dirs_is_nothing_found_in_every_command(tmp_path, capsys, command, content):
    if content == "other folders":
        (tmp_path / "something").mkdir()
    assert main([command, str(tmp_path)]) == 3
    assert "PROF_*" in capsys.readouterr().err


@pytest.mark.parametrize("command", ["report", "summary"])
def test_no_iterations_is_nothing_found(tmp_path, capsys, command):
    prof = make_prof_dir(tmp_path, {0: ""})
    assert main([command, str(prof)]) == 3
    assert "no iteration records" in capsys.readouterr().err
    assert not (prof / "mindstudio_profiler_output").exists()


def test_prof_dir_without_device_folders_is_nothing_found(tmp_path, capsys):
    prof = tmp_path / "PROF_1_20240101000000_abcdefgh"
    prof.mkdir()
    assert main(["report", str(prof)]) == 3


def test_one_empty_prof_dir_among_others_still_reports_the_rest(tmp_path, capsys):
    make_prof_dir(tmp_path, {0: iterations(2)}, pid=1)
    make_prof_dir(tmp_path, {0: ""}, pid=2)
    assert main(["report", str(tmp_path)]) == 0
    captured = capsys.readouterr()
    assert len(captured.out.split()) == 2
    assert "nothing to report" in captured.err


def test_report_warns_about_a_torn_line_on_stderr_and_succeeds(tmp_path, capsys):
    prof = make_prof_dir(tmp_path, {0: jsonl(iterations(3)) + '{"model_id": 1, "ru'})
    assert main(["report", str(prof)]) == 0
    captured = capsys.readouterr()
    assert "warning:" in captured.err and "line 4" in captured.err and "training_trace.jsonl" in captured.err
    assert len(read_csv(Path(captured.out.split()[0]))[1]) == 3


def test_summary_text_and_json(tmp_path, capsys):
    phases = Phases(data_aug=300, get_next=250, fp_bp=600, refresh=100)
    prof = make_prof_dir(tmp_path, {0: iterations(5, phases=phases)})
    assert main(["summary", str(prof)]) == 0
    text = capsys.readouterr().out
    assert "Device 0, Model ID 1: 5 iterations" in text and "highly input-bound" in text
    assert main(["summary", str(prof), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert isinstance(data, list) and len(data) == 1
    (model,) = data[0]["models"]
    assert model["verdict"] == "highly input-bound"
    assert model["input_share"] == pytest.approx(0.25)
    assert data[0]["prof_dir"] == str(prof)


def test_summary_does_not_write_reports(tmp_path, capsys):
    prof = make_prof_dir(tmp_path, {0: iterations(2)})
    assert main(["summary", str(prof)]) == 0
    assert not (prof / "mindstudio_profiler_output").exists()


def test_report_and_summary_never_import_tensorflow(tmp_path):
    prof = make_prof_dir(tmp_path, {0: iterations(3)})
    code = f"""
import npu_tf_profiling.reports
import npu_tf_profiling.reports.commands.report, npu_tf_profiling.reports.commands.summary
from npu_tf_profiling.reports import write_step_trace_reports, summarize_prof_dir, validate_chrome_trace
from npu_tf_profiling.reports import write_all_reports, read_task_trace, load_device_tasks, task_windows
import npu_tf_profiling.reports.task.step_stats, npu_tf_profiling.reports.task.records, npu_tf_profiling.reports.task.table, npu_tf_profiling.reports.task.op_summary
import npu_tf_profiling.reports.task.timeline, npu_tf_profiling.reports.task.files
from npu_tf_profiling.cli import main
assert main(["report", {str(prof)!r}]) == 0
assert main(["summary", {str(prof)!r}, "--json"]) == 0
"""
    assert '"device_id": 0' in run_without_tensorflow(code, tmp_path)


def test_python_dash_m_entry_point(tmp_path):
    prof = make_prof_dir(tmp_path, {0: iterations(2)})
    env = dict(os.environ, PYTHONPATH=str(REPO))
    proc = subprocess.run(
        [sys.executable, "-m", "npu_tf_profiling", "report", str(prof)], env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().endswith(".json")


def test_pointing_at_a_device_folder_names_the_parent(tmp_path, capsys):
    prof = make_prof_dir(tmp_path, {0: iterations(2)})
    assert main(["report", str(prof / "device_0")]) == 2
    assert f"give its parent PROF_* folder ({prof})" in capsys.readouterr().err
