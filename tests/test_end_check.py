"""The self-check's decision (runtime/end_check.py) on calls and rows given as numbers.

The real runs are tests/test_tf2_step_end.py; here the cases a run rarely shows: a loaded host that
delays some returns (no warning), rows read before their calls returned, and calls that cannot be
matched with rows (no verdict, said so).
"""
from __future__ import annotations

import numpy as np

from npu_tf_profiling.runtime.end_check import BOUND_US, SAMPLE_RUNS, SKIP_RUNS, EndCheck

STEP_US = 10_000.0
RUNS = np.arange(1, SKIP_RUNS + SAMPLE_RUNS + 3)


def _check(gaps_us: np.ndarray) -> EndCheck:
    """Rows every STEP_US; each call returns `gaps_us[i]` after its row's end. Returns first, then rows."""
    ends = 1e15 + RUNS * STEP_US
    check = EndCheck("train_step", "Adam_1/AssignSubVariableOp_3")
    check.add_returns(list(zip(RUNS.tolist(), (ends + gaps_us).tolist())))
    assert not check.decided
    check.add_rows(RUNS.astype(np.float64), ends)
    return check


def test_some_late_returns_on_a_loaded_host_are_no_early_end() -> None:
    gaps = np.full(len(RUNS), 500.0)
    gaps[::3] = 40_000.0  # a third of the calls preempted: the median would say early
    check = _check(gaps)
    assert check.result["checked"] and not check.result["early"] and check.note is None
    assert check.result["median_return_after_end_us"] == 500.0 and check.result["max_return_after_end_us"] == 40_000.0


def test_every_return_late_is_an_early_end_said_with_its_point() -> None:
    check = _check(np.full(len(RUNS), 3 * BOUND_US))
    assert check.result["early"] and check.result["p10_return_after_end_us"] == 3 * BOUND_US
    assert "Adam_1/AssignSubVariableOp_3" in check.note and "train_step" in check.note and check.result["note"] == check.note


def test_the_decision_waits_for_whichever_of_rows_and_returns_comes_last() -> None:
    ends = 1e15 + RUNS * STEP_US
    check = EndCheck("train_step", "end")
    check.add_rows(RUNS.astype(np.float64), ends)
    assert not check.decided
    check.add_returns(list(zip(RUNS.tolist(), (ends + 300.0).tolist())))
    assert check.decided and not check.result["early"]


def test_calls_numbered_apart_from_the_rows_give_no_verdict() -> None:
    check = _check(np.full(len(RUNS), -STEP_US))  # each "return" is the previous call's
    assert check.result == {"checked": False, "reason": check.result["reason"]} and check.note is None
