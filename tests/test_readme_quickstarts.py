"""The README's three quickstarts run as printed and profile every step.

The code blocks are read from the README itself (the "Quickstart" section), so a
snippet that stops working fails here. Only the output folders change
(`/tmp/prof...` becomes the test's tmp dir) and `python` is this interpreter.
Each runs in a fresh process with the installed package, as a user's would.
"""
from __future__ import annotations

import csv
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
QUICKSTART = re.search(r"^## Quickstart\n(.*?)^## ", (REPO / "README.md").read_text(), re.S | re.M).group(1)
BLOCKS = re.findall(r"^```(bash|python)\n(.*?)^```", QUICKSTART, re.S | re.M)


def step_trace_rows(output: Path) -> list[dict[str, str]]:
    (prof,) = output.glob("PROF_*")  # one process, one PROF folder
    (table,) = (prof / "mindstudio_profiler_output").glob("step_trace_*.csv")
    with table.open(newline="") as f:
        return list(csv.DictReader(f))


def test_the_readme_has_the_three_quickstarts() -> None:
    assert [kind for kind, _ in BLOCKS] == ["bash", "python", "python"]
    assert "PROFILING_OPTIONS" in BLOCKS[0][1] and "start_tf2_profiling" in BLOCKS[1][1]
    assert "NPURunConfig(profiling_config=" in BLOCKS[2][1]


# (block index, iterations the snippet trains: plain_tf_train.py's 50 steps, 2 epochs of 32 batches, 100 steps)
@pytest.mark.parametrize(("index", "iterations"), [(0, 50), (1, 64), (2, 100)], ids=["env", "tf2", "estimator"])
def test_quickstart_runs_and_profiles_every_step(index: int, iterations: int, tmp_path: Path) -> None:
    kind, code = BLOCKS[index]
    code = code.replace("/tmp/prof", str(tmp_path / "prof"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("PROFILING_")}
    if kind == "bash":
        code = re.sub(r"^python ", f"{sys.executable} ", code, flags=re.M)
        command = ["bash", "-euc", code]
    else:
        command = [sys.executable, "-c", code]
    done = subprocess.run(command, cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = step_trace_rows(tmp_path / "prof")
    assert [int(row["Iteration ID"]) for row in rows] == list(range(1, iterations + 1))
    assert all(row["FP to BP Time(us)"] != "N/A" for row in rows)
