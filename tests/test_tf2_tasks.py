"""task_trace on TensorFlow 2 steps: the window's calls captured by TensorFlow's profiler, in the Session path's task files.

Each style of tests/scripts/tf2_train.py runs with a task window (steps 3-5) through
the env vars, and unprofiled: the weights are bit-identical; task_time holds the
window's iterations only, with the Iteration IDs of step_trace; each task lies in its
own iteration (after the previous iteration's end, and ending by its call's end);
the step's own kernels (its first layer's, its optimizer's) are there once per
iteration; and the msprof-analyze layout has the kernels.
"""
from __future__ import annotations

import csv
from pathlib import Path

import pytest

from tests.test_tf2_step_trace import info_of, rows_by_model, train
from tests.trace_files import only_prof_dir, step_trace_rows

WINDOW = (3, 5)
# A call's last kernels (its outputs, the ring's write) run after the row's Iteration End stamp.
AFTER_END_US = 2000.0


def task_rows(output: Path) -> list[dict[str, str]]:
    (path,) = (only_prof_dir(output) / "mindstudio_profiler_output").glob("task_time_*.csv")
    with path.open(newline="") as handle:
        return list(csv.DictReader(handle))


@pytest.mark.parametrize("style", ["loop", "fit", "for_dataset"])
def test_the_window_gets_its_tasks_in_its_own_iterations(tmp_path: Path, style: str) -> None:
    options = {"output": str(tmp_path), "training_trace": "on", "task_trace": "on", "start_step": WINDOW[0], "stop_step": WINDOW[1]}
    profiled, done = train(style, tmp_path, options=options)
    assert profiled["weights"] == train(style, None)[0]["weights"]
    assert "task_trace" not in " ".join(info_of(tmp_path)["notes"])  # nothing said to be missing
    # The window's end writes the reports while the job runs, quietly: the summary line is the final report's, once.
    assert done.stderr.count("traced iteration(s)") == 1, done.stderr
    _, rows = step_trace_rows(tmp_path)
    steps = rows_by_model(rows)
    tasks = task_rows(tmp_path)
    assert {t["Model ID"] for t in tasks} == set(steps)
    window = set(range(WINDOW[0], WINDOW[1] + 1))
    for model_id, model_rows in steps.items():
        mine = [t for t in tasks if t["Model ID"] == model_id]
        assert {int(t["Iteration ID"]) for t in mine} == window
        end_of = {int(r["Iteration ID"]): float(r["Iteration End(us)"]) for r in model_rows}
        for task in mine:
            iteration = int(task["Iteration ID"])
            start, duration = float(task["Task Start(us)"]), float(task["Task Duration(us)"])
            assert end_of[iteration - 1] <= start and start + duration <= end_of[iteration] + AFTER_END_US, task
        for iteration in window:  # the step's own kernels, each iteration (Keras 3: inlined under its caller's call)
            names = {t["Op Name"] for t in mine if int(t["Iteration ID"]) == iteration}
            assert any("gradient_tape/" in n for n in names) and any("Assign" in n or "Apply" in n for n in names), names
    (kernels,) = tmp_path.glob("*_ascend_pt/ASCEND_PROFILER_OUTPUT/kernel_details.csv")
    with kernels.open(newline="") as handle:
        assert len(list(csv.DictReader(handle))) == len(tasks)
