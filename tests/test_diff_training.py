"""`npu-tf-prof diff` and `view --compare` on a real pair of tiny trainings: one sleeps in its input pipeline.

``tests/scripts/diff_train.py`` trains a small TF1 model on a tf.data generator,
profiled through PROFILING_MODE alone; the candidate's generator sleeps 3 ms
before each batch (a slow input pipeline), against a step of well under 1 ms
(about 0.4 ms here on 2 loaded cores, benchmarks/RESULTS.md), so the change is
many times any run-to-run spread: the verdict and the shift hold on load.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from npu_tf_profiling.cli import main

SCRIPT = Path(__file__).resolve().parent / "scripts" / "diff_train.py"
SLEEP_MS = 3.0
STEPS = 40


def train(output: Path, *args: str) -> Path:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PROFILING_")}
    env.update(PROFILING_MODE="true", PROFILING_OPTIONS=json.dumps({"output": str(output), "training_trace": "on"}))
    done = subprocess.run([sys.executable, str(SCRIPT), "--steps", str(STEPS), *args], env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return output


@pytest.fixture(scope="module")
def pair(tmp_path_factory) -> tuple[Path, Path]:
    root = tmp_path_factory.mktemp("diff_pair")
    return train(root / "baseline"), train(root / "candidate", "--sleep-ms", str(SLEEP_MS))


def test_a_sleep_in_the_input_pipeline_is_a_data_aug_bound_regression(pair, capsys) -> None:
    code = main(["diff", str(pair[0]), str(pair[1]), "--json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 4 and report["exit_code"] == 4
    assert report["verdict"].startswith("REGRESSION: Iteration Time +")
    assert ", from Data Aug Bound (+" in report["verdict"]
    phases = {p["phase"]: p for p in report["models"][0]["phases"]}
    assert phases["Data Aug Bound"]["moved"] == 1
    # The sleep, nearly whole, inside Data Aug Bound: the shift (Hodges–Lehmann, a median of pairwise differences) holds
    # on load; the interval's lower end does not (CI on 2 loaded cores: +1415 µs for the 3 ms sleep, since a loaded
    # baseline has its own multi-ms gaps), so it is held to leave out 0 only (`moved`).
    assert phases["Data Aug Bound"]["change_us"] > 0.8 * SLEEP_MS * 1000
    assert phases["Iteration Time"]["baseline_iterations"] == STEPS - 1  # steady: the first iteration left out
    assert main(["diff", str(pair[1]), str(pair[0])]) == 0
    assert capsys.readouterr().out.startswith("IMPROVEMENT: Iteration Time -")


def test_view_compare_overlays_each_phase(pair, capsys) -> None:
    pytest.importorskip("plotly")
    assert main(["view", str(pair[0]), "--compare", str(pair[1])]) == 0
    page = Path(capsys.readouterr().out.strip())
    assert page.name == "view_compare.html"
    html = page.read_text()
    assert f"Compared with {pair[1]}" in html and "REGRESSION: Iteration Time +" in html
    for phase in ("Iteration Time", "Data Aug Bound", "GetNext", "FP to BP", "Iteration Refresh"):
        assert f"{phase}: baseline and candidate" in html
    assert html.count('"barmode":"overlay"') == 5
