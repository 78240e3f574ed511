"""ModelZoo-style TF2 scripts (`import npu_device`, global_options, open().as_default(), Keras 2.6 dropout
conversion) run unmodified through `npu-tf-prof run`: one step-trace row per iteration, results bit-identical
to a plain run, a foreign fp_point (a BERT op name) falls back with its note, and their `task_trace: on`
gives the task files of the default window.

The scripts live in tests/scripts/npu_device_tf2/ as a ModelZoo folder would: their own `npu_ops.py` and
`npu_convert_dropout.py` (written for these tests in that style) are found first on sys.path.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.helpers.side_by_side import Command, run_side_by_side
from tests.test_tf2_step_trace import info_of
from tests.test_tf2_tasks import task_rows
from tests.helpers.trace_files import assert_step_trace_formulas, step_trace_rows

FOLDER = Path(__file__).parent / "scripts" / "npu_device_tf2"
CONSOLE_SCRIPT = str(Path(sys.executable).parent / "npu-tf-prof")
STEPS = 16  # past task_trace's default window (skip 10 iterations, trace 5)
DEFAULT_TASK_WINDOW = set(range(11, 16))
BERT_FP = "While_body_while_body_44418_1223/bert/embeddings/MatMul"


def launch_with_plain(script: str, *args: str) -> tuple[dict, subprocess.CompletedProcess, dict]:
    """The script run with `args` and plainly (no arguments), side by side: (result, its process, plain result)."""
    (profiled, done), (plain, _) = _launches([(script, args), (script, ())])
    return profiled, done, plain


def _launches(runs: list[tuple[str, tuple[str, ...]]]) -> list[tuple[dict, subprocess.CompletedProcess]]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PROFILING_")}
    commands = [Command([CONSOLE_SCRIPT, "run", script, "--steps", str(STEPS), *args], env, FOLDER) for script, args in runs]
    results = []
    for done in run_side_by_side(commands, timeout=240):
        assert done.returncode == 0, done.stderr
        results.append((json.loads(done.stdout.splitlines()[-1]), done))
    return results


def test_keras_fit_script_runs_unmodified_with_a_row_per_step(tmp_path: Path) -> None:
    profiled, done, plain = launch_with_plain("keras_fit_train.py", "--profiling", "True", "--profiling_dump_path", str(tmp_path))
    assert profiled == plain  # same weights, same loss
    _, rows = step_trace_rows(tmp_path)
    assert [int(r["Iteration ID"]) for r in rows] == list(range(1, STEPS + 1))
    assert all(r["FP Start(us)"] != "N/A" and r["GetNext Time(us)"] != "N/A" for r in rows)
    assert_step_trace_formulas(rows)
    # The NPU-only options are reported once, at the open() line, and nothing else of them is silently dropped.
    notes = [line for line in done.stderr.splitlines() if "accepted, no effect on CPU/GPU" in line]
    assert len(notes) == 1 and "common.py" in notes[0]
    assert "precision_mode" in notes[0] and "dump_config.dump_path" in notes[0] and "dump_config.enable_dump" not in notes[0]
    assert {int(t["Iteration ID"]) for t in task_rows(tmp_path)} == DEFAULT_TASK_WINDOW


def test_custom_loop_script_with_a_foreign_fp_point_falls_back_with_its_note(tmp_path: Path) -> None:
    profiled, done, plain = launch_with_plain("custom_loop_train.py", "--profiling", "True", "--profiling_dump_path", str(tmp_path),
                                              "--fp_point", BERT_FP)
    assert profiled == plain
    assert "is not an op in this graph" in done.stderr and "training goes on with the automatic fp_point" in done.stderr
    assert "last_step_finite True" in done.stdout
    _, rows = step_trace_rows(tmp_path)
    assert len(rows) == STEPS and all(r["FP Start(us)"] != "N/A" for r in rows)
    assert_step_trace_formulas(rows)
    model = next(iter(info_of(tmp_path)["models"].values()))
    assert model["trace_points_fallback"]["fp_point"]["asked"] == BERT_FP
    # The vendored dropout conversion really ran: the closest op names listed come from its mask op.
    assert "DropOutGenMask" in done.stderr
    assert {int(t["Iteration ID"]) for t in task_rows(tmp_path)} == DEFAULT_TASK_WINDOW


def test_without_the_launcher_the_script_stops_at_import_npu_device() -> None:
    done = subprocess.run([sys.executable, "keras_fit_train.py"], cwd=FOLDER, capture_output=True, text=True, timeout=120)
    assert done.returncode == 1 and "No module named 'npu_device'" in done.stderr
