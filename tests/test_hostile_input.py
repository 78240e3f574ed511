"""Hostile input (the fault table of docs/troubleshooting.md: links, bad values, duplicate keys, crafted raw data).

Each test is one way a user, a shared folder or a damaged file can try to make the
package lose data, write elsewhere, crash or mislead: files the package did not
make stay byte-identical, every bad value is a ProfilingOptionsError naming its
key, and crafted raw data reports with exit 0 and a warning.
"""
from __future__ import annotations

import json
import os
import re
import stat
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from npu_tf_profiling.cli import main as cli_main
from npu_tf_profiling.config import ProfilingOptions, ProfilingOptionsError
from npu_tf_profiling.raw_format import layout, own_files
from npu_tf_profiling.raw_format.atomic import atomic_write_text
from npu_tf_profiling.raw_format.errors import ForeignFileError
from npu_tf_profiling.raw_format.training_frame import MAX_REDUCE_PAIRS, NO_STEP, RecordShape, encode_frame
from npu_tf_profiling.reports.msprof import names as msprof_names
from tests.helpers.raw_fixtures import T0, make_prof_dir, record

SCRIPTS = Path(__file__).parent / "scripts"
VICTIM_TEXT = b"the user's own data\n"


@pytest.fixture
def victim(tmp_path: Path) -> Path:
    """A user's file outside every folder the package writes."""
    path = tmp_path / "elsewhere" / "precious.txt"
    path.parent.mkdir()
    path.write_bytes(VICTIM_TEXT)
    return path


# ----- 1-3: links planted where the package writes ---------------------------------------------------------------
def test_a_link_named_like_the_old_writability_probe_is_left_alone(tmp_path: Path, victim: Path) -> None:
    output = tmp_path / "out"
    output.mkdir()
    link = output / f".npu_tf_profiling_write_test_{os.getpid()}"
    link.symlink_to(victim)
    assert ProfilingOptions.parse({"output": str(output)}).resolve_output() == output
    assert victim.read_bytes() == VICTIM_TEXT and link.is_symlink()
    assert sorted(p.name for p in output.iterdir()) == [link.name]  # the probe's own file is gone again


def test_a_link_at_a_report_name_is_refused_not_replaced(tmp_path: Path, victim: Path) -> None:
    link = tmp_path / "report.csv"
    link.symlink_to(victim)
    with pytest.raises(ForeignFileError, match=r"report\.csv is a symlink \(to .*precious\.txt\) that npu_tf_profiling did not create"):
        atomic_write_text(link, "new")
    assert victim.read_bytes() == VICTIM_TEXT and link.is_symlink()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temporary file left behind


def test_a_fifo_at_the_raw_file_name_is_refused(tmp_path: Path) -> None:
    fifo = tmp_path / "training_trace.bin"
    os.mkfifo(fifo)
    with pytest.raises(ForeignFileError, match="a FIFO"):
        own_files.open_append(fifo)


def test_a_planted_rank_folder_link_and_cluster_file_link_are_left_alone(tmp_path: Path, victim: Path) -> None:
    prof = make_prof_dir(tmp_path, {0: [record(run=i, iteration_end=T0 + 1000 * i) for i in (1, 2, 3)]},
                         info={"device_id": 0, "host": "node0"})
    rank_folder = msprof_names.rank_folder(prof, "node0", 0)
    rank_folder.symlink_to(victim.parent, target_is_directory=True)
    cluster_dir = tmp_path / "npu_tf_prof_cluster"
    cluster_dir.mkdir()
    (cluster_dir / "slow_rank.txt").symlink_to(victim)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cli_main(["report", str(prof)])
        assert cli_main(["cluster", str(tmp_path)]) == 2  # refused, and said so
    assert sorted(p.name for p in victim.parent.iterdir()) == ["precious.txt"]
    assert victim.read_bytes() == VICTIM_TEXT
    assert (prof / layout.REPORT_DIR).is_dir()  # the PROF folder's own reports were written


def test_the_dynamic_log_through_a_link_is_refused_once(tmp_path: Path, victim: Path) -> None:
    from npu_tf_profiling.runtime.dynamic import DynamicController

    config = tmp_path / "profiler_config.json"
    controller = DynamicController.__new__(DynamicController)  # only its log path decides where it writes
    log_dir = tmp_path / "log"
    log_dir.mkdir()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        log_path = log_dir / "monitor_dp_probe.log"
        log_path.symlink_to(victim)
        controller.log_path = log_path
        controller._log_refused = False
        controller._log("INFO", "one")
        controller._log("INFO", "two")
    assert victim.read_bytes() == VICTIM_TEXT
    refused = [w for w in caught if "dynamic-profiling log is not written" in str(w.message)]
    assert len(refused) == 1 and "monitor_dp_probe.log is a symlink" in str(refused[0].message)
    assert not config.exists()


def test_a_real_dynamic_controller_with_a_linked_log_folder_writes_nothing_there(tmp_path: Path, victim: Path) -> None:
    from npu_tf_profiling.runtime.dynamic import DynamicController

    (tmp_path / "log").symlink_to(victim.parent, target_is_directory=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        DynamicController(tmp_path / "profiler_config.json", poll_interval_s=0.0)
    assert sorted(p.name for p in victim.parent.iterdir()) == ["precious.txt"]
    assert any("log is a symlink" in str(w.message) for w in caught)
    assert json.loads((tmp_path / "profiler_config.json").read_text())["training_trace"] == "on"  # the template itself


@pytest.mark.parametrize("target_folder_exists", [True, False])
def test_a_dangling_config_link_gets_no_template_written_through_it(tmp_path: Path, target_folder_exists: bool) -> None:
    from npu_tf_profiling.runtime.dynamic import DynamicController

    target = tmp_path / ("there" if target_folder_exists else "missing") / "profiler_config.json"
    if target_folder_exists:
        target.parent.mkdir()
    watched = tmp_path / "watched"
    watched.mkdir()
    (watched / "profiler_config.json").symlink_to(target)
    with pytest.raises(ProfilingOptionsError, match=r"PROFILING_DYNAMIC_CONFIG: .*watched/profiler_config\.json is a symlink \(to .*\), which leads to no file"):
        DynamicController(watched / "profiler_config.json")
    assert not target.exists()


# ----- 4, 6, 10, 12: every bad option value names its key ----------------------------------------------------------
@pytest.mark.parametrize(
    "text, key, says",
    [
        ('{"output": "/tmp/a\\u0000b"}', "output", "control characters"),
        ('{"output": "/tmp/\\ud800"}', "output", "lone surrogate"),
        ('{"output": "/tmp/\\u001b[31mred"}', "output", "control characters"),
        ('{"fp_point": "dense\\u0000"}', "fp_point", "control characters"),
        ('{"start_step": ' + "9" * 5000 + "}", "start_step", "5000 characters"),
        ('{"start_step": 9223372036854775808}', "start_step", "<= 9223372036854775807"),
        ('{"storage_limit": "' + "9" * 5000 + 'MB"}', "storage_limit", "from 200MB"),
        ('{"dvpp_freq": "\\u00b2"}', "dvpp_freq", "whole number from 1 to 100"),
        ('{"schedule": {"active": ' + "7" * 5000 + "}}", "schedule", "'active' must be a whole number"),
    ],
    ids=["nul", "surrogate", "escape", "fp-nul", "5000-digits", "int64", "storage-digits", "superscript", "schedule-digits"],
)
def test_bad_values_name_their_key(text: str, key: str, says: str) -> None:
    with pytest.raises(ProfilingOptionsError, match=f"option '{key}'") as caught:
        ProfilingOptions.parse(text, origin="PROFILING_OPTIONS")
    assert says in str(caught.value) and str(caught.value).startswith("PROFILING_OPTIONS: ")
    assert len(str(caught.value)) < 700


def test_a_huge_bad_value_is_quoted_cut() -> None:
    with pytest.raises(ProfilingOptionsError) as caught:
        ProfilingOptions.parse(json.dumps({"training_trace": "x" * 10_000_000}))
    assert "(10000002 characters)" in str(caught.value) and len(str(caught.value)) < 400


def test_an_unknown_user_home_in_output_names_the_key() -> None:
    with pytest.raises(ProfilingOptionsError, match=r"option 'output': '~nosuchuser_npu/x' cannot be expanded: there is no user 'nosuchuser_npu'"):
        ProfilingOptions.parse({"output": "~nosuchuser_npu/x"}).resolve_output()


@pytest.mark.parametrize(
    "text, says",
    [
        ('{"training_trace": "on", "training_trace": "off"}', "key 'training_trace' is given twice"),
        ('{"schedule": {"active": 1, "active": 2}}', "key 'active' is given twice"),
        ('{"result_path": "/tmp/a", "output": "/tmp/b"}', "option 'output' is given twice, as 'result_path' (its deprecated spelling) and as 'output'"),
        ('{"task_time": "on", "task_trace": "off"}', "option 'task_trace' is given twice, as 'task_time' and as 'task_trace'"),
    ],
)
def test_a_key_given_twice_is_an_error_naming_both(text: str, says: str) -> None:
    with pytest.raises(ProfilingOptionsError) as caught:
        ProfilingOptions.parse(text)
    assert says in str(caught.value)


def _symlink_loop(tmp_path: Path) -> Path:
    (tmp_path / "loop_a").symlink_to(tmp_path / "loop_b")
    (tmp_path / "loop_b").symlink_to(tmp_path / "loop_a")
    return tmp_path / "loop_a"


@pytest.mark.parametrize(
    "make, says",
    [
        (lambda t: (t / "file").write_text("x") and t / "file", "exists and is not a folder (it is a file)"),
        (lambda t: Path("/dev/null"), "is a device, not a folder"),
        (_symlink_loop, "is a symlink loop"),
        (lambda t: _symlink_loop(t) / "sub", "is a symlink loop"),
        (lambda t: Path("/proc"), "is not writable: it takes no new files"),
    ],
    ids=["file", "device", "loop", "under-loop", "proc"],
)
@pytest.mark.parametrize("key", ["output", "tensorboard"])
def test_output_problems_say_what_they_are(tmp_path: Path, make, says: str, key: str) -> None:
    options = {"output": str(tmp_path / "out"), key: str(make(tmp_path))}
    with pytest.raises(ProfilingOptionsError, match=f"option '{key}': '.*' {re.escape(says)}"):
        ProfilingOptions.parse(options).resolve_output()


# ----- 5: after an options error, no note claims nothing ran for another reason ----------------------------------------
def test_an_options_error_at_session_creation_gets_no_misleading_note_at_exit(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PROFILING_")}
    env.update(PROFILING_MODE="true", PROFILING_OPTIONS='{"output": "%s", "training_trace": "on", "training_trace": "off"}' % tmp_path)
    code = "import tensorflow.compat.v1 as tf\ntf.disable_eager_execution()\ntf.Session()\n"
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=180)
    assert done.returncode == 1 and "key 'training_trace' is given twice" in done.stderr
    assert "no training step ran" not in done.stderr


# ----- 7-9: crafted raw data ----------------------------------------------------------------------------------------------
def _write_frames(root: Path, frames: list[bytes]) -> Path:
    prof = make_prof_dir(root, {0: None})
    path = layout.training_frames_path(prof, 0)
    path.write_bytes(b"".join(frames))
    return prof


def _frame(runs: list[int], times: list[list[float]], shape: RecordShape) -> bytes:
    rows = np.zeros(len(runs), dtype=shape.dtype)
    rows["run"], rows["step"], rows["times"] = runs, NO_STEP, times
    return encode_frame(1, shape, rows)


_SHAPE = RecordShape(get_next_pairs=1, has_fp=True, has_bp=True, reduce_pairs=0, has_step=False)


def _times(run: int, offset: float = 0.0) -> list[float]:
    base = T0 + 1000 * run + offset
    return [base, base + 10, base + 20, base + 500, base + 900]


def _run_all_commands(root: Path, capsys: pytest.CaptureFixture[str]) -> str:
    errors = []
    for command in ("report", "summary", "cluster"):
        assert cli_main([command, str(root)]) == 0, command
        errors.append(capsys.readouterr().err)
    return "".join(errors)


def test_times_that_are_no_clock_reading_are_left_out_with_one_warning(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    crafted = [_times(r) for r in (1, 2, 3)]
    crafted[0][3] = 1e300  # bp_end of record 1
    crafted[1][2] = -5.0  # fp_start of record 2
    crafted[2][0] = float("inf")  # a GetNext start of record 3
    _write_frames(tmp_path, [_frame([1, 2, 3], crafted, _SHAPE)])
    err = _run_all_commands(tmp_path, capsys)
    assert err.count("3 time value(s) in 3 record(s) (record 1, 2, 3) are negative, not finite or after the year 2100") == 3
    rows = (next(tmp_path.glob("PROF_*/mindstudio_profiler_output/step_trace_*.csv"))).read_text().splitlines()
    assert rows[1].split(",")[3] == "N/A" and rows[2].split(",")[2] == "N/A"


def test_repeated_run_counters_are_reported_by_every_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    first = _frame([1, 2, 3], [_times(r) for r in (1, 2, 3)], _SHAPE)
    again = _frame([1, 2, 3], [_times(r, offset=10_000) for r in (1, 2, 3)], _SHAPE)
    _write_frames(tmp_path, [first, again])
    err = _run_all_commands(tmp_path, capsys)
    assert err.count("the run counter repeats") == 3 and "number the 6 records 1..6" in err
    rows = next(tmp_path.glob("PROF_*/mindstudio_profiler_output/step_trace_*.csv")).read_text().splitlines()[1:]
    assert [r.split(",")[1] for r in rows] == ["1", "2", "3", "4", "5", "6"]


@pytest.mark.timeout(60)  # it was still running after 300 s; the figure itself is benchmarks/report_speed.py's
def test_a_frame_claiming_30000_reduce_pairs_reports_the_first_ones(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    pairs = 30_000
    shape = RecordShape(1, True, True, pairs, False)

    def times(run: int) -> list[float]:
        base = T0 + 1_000_000 * run
        reduces = [base + 600 + 0.01 * i for i in range(2 * pairs)]
        return [base, base + 10, base + 20, base + 500, *reduces, base + 900_000]

    _write_frames(tmp_path, [_frame([1, 2], [times(1), times(2)], shape)])
    err = _run_all_commands(tmp_path, capsys)
    assert err.count(f"claims {pairs} all-reduce pairs per record, and the writer writes at most {MAX_REDUCE_PAIRS}") == 3
    header = next(tmp_path.glob("PROF_*/mindstudio_profiler_output/step_trace_*.csv")).read_text().splitlines()[0].split(",")
    assert header.count("Reduce Start(us)") == MAX_REDUCE_PAIRS


def test_json_lines_with_huge_counters_and_times_are_skipped_or_left_out(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    lines = [
        json.dumps({"model_id": 1, "run": 1, "fp_start": 1e300, "iteration_end": T0 + 1000}),
        json.dumps({"model_id": 1, "run": 10**30, "iteration_end": T0 + 2000}),
        json.dumps({"model_id": 1, "run": 3, "iteration_end": 1e300}),
        json.dumps({"model_id": 1, "run": 4, "iteration_end": T0 + 4000}),
    ]
    prof = make_prof_dir(tmp_path, {0: "\n".join(lines) + "\n"})
    assert cli_main(["report", str(prof)]) == 0
    err = capsys.readouterr().err
    assert "line 2: not a training_trace record: 'run' is outside the 64-bit range" in err
    assert "line 3: not a training_trace record: 'iteration_end' is no clock reading" in err
    assert "1 time value(s) in 1 line(s) (line 1)" in err


# ----- 11: one permission rule ----------------------------------------------------------------------------------------------
@pytest.mark.parametrize("umask", [0o022, 0o002, 0o077])
def test_every_file_written_gets_the_umask_mode(tmp_path: Path, umask: int) -> None:
    old = os.umask(umask)
    try:
        prof = make_prof_dir(tmp_path, {0: [record(run=i, iteration_end=T0 + 1000 * i) for i in (1, 2, 3)]})
        fd = own_files.open_append(layout.training_frames_path(prof, 0))
        os.close(fd)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            assert cli_main(["report", str(prof)]) == 0
    finally:
        os.umask(old)
    written = [p for p in tmp_path.rglob("*") if p.is_file() and p.suffix in (".csv", ".json", ".db", ".bin")]
    modes = {p.relative_to(tmp_path).as_posix(): stat.S_IMODE(p.stat().st_mode) for p in written}
    assert any(name.endswith(".db") for name in modes) and any(name.endswith(".bin") for name in modes)
    expected = {name: 0o666 & ~umask for name in modes if not name.endswith("training_trace.jsonl")}
    assert {name: mode for name, mode in modes.items() if name in expected} == expected


# ----- the small items ---------------------------------------------------------------------------------------------------------
def test_a_host_name_with_a_leading_dot_makes_no_hidden_folder(tmp_path: Path) -> None:
    name = msprof_names.rank_folder_name(tmp_path / "PROF_1_20260101000000_ABCDEFGH", ".hidden", 0)
    assert name.startswith("hidden_1_")


def test_a_cyclic_graph_gets_a_warning_from_points(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    graph = tmp_path / "cyclic.pbtxt"
    graph.write_text(
        'node { name: "x" op: "Placeholder" attr { key: "dtype" value { type: DT_FLOAT } } }\n'
        'node { name: "a" op: "Add" input: "x" input: "b" attr { key: "T" value { type: DT_FLOAT } } }\n'
        'node { name: "b" op: "Relu" input: "a" attr { key: "T" value { type: DT_FLOAT } } }\n'
    )
    cli_main(["points", str(graph)])
    assert "warning: the graph has 1 cycle(s) that no while loop (NextIteration) makes, through 'a'" in capsys.readouterr().out


def test_a_dynamic_window_already_past_makes_no_folder(tmp_path: Path) -> None:
    from npu_tf_profiling.runtime.dynamic import DynamicController

    config = tmp_path / "profiler_config.json"
    controller = DynamicController(config, poll_interval_s=0.0)
    controller.after_iteration(50)
    config.write_text(json.dumps({"output": str(tmp_path / "out"), "training_trace": "on", "start_step": 5, "stop_step": 6}))
    os.utime(config, ns=(10**18, 10**18))
    assert controller.poll() is None
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").glob("PROF_*"))
    log = next((tmp_path / "log").glob("monitor_dp_*.log")).read_text()
    assert "has already passed: the job is at iteration 50" in log


def test_the_storage_limit_is_announced_once_for_all_the_folders_writers(tmp_path: Path) -> None:
    from npu_tf_profiling.raw_format.append_writer import AppendOnlyWriter, StorageBudget

    budget = StorageBudget(100)
    writers = [AppendOnlyWriter(tmp_path / name, budget) for name in ("training_trace.bin", "task_trace.bin")]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert writers[0].append(b"x" * 60) and not writers[1].append(b"y" * 60) and not writers[0].append(b"z" * 60)
    assert [str(w.message).count("storage_limit reached (100 bytes)") for w in caught] == [1]
    assert all(w.stopped_reason for w in writers)
