"""A step's batches read by its caller (Keras 3's fit): each call's reads go to that call's steps, in order.

Times are µs. A call reads its first batch before its loop and each next one in a
branch that runs beside the body's step (runtime/functions/fed_batches.py).
"""
from __future__ import annotations

import numpy as np

from npu_tf_profiling.runtime.functions.fed_batches import PATIENCE_US, FedBatches


def batches() -> FedBatches:
    fed = FedBatches(reason="test")
    # call 1: first read 0-10, ends at 100; the loop's reads of batches 2 and 3 start beside steps 1 and 2
    fed.add_calls(np.array([0.0]), np.array([10.0]), np.array([100.0]))
    fed.add_reads(np.array([15.0, 52.0]), np.array([19.0, 56.0]))
    # call 2 (the end of the data: a read, no step), call 3: one step
    fed.add_calls(np.array([110.0, 130.0]), np.array([112.0, 135.0]), np.array([120.0, 160.0]))
    return fed


def test_each_step_takes_its_own_read_though_the_next_one_ended_first():
    fed = batches()
    begin, end = fed.join(np.array([20.0, 57.0, 80.0, 140.0]))
    # step 1 starts after the read of batch 2 ended (19 < 20): still batch 1's read is its own
    assert begin.tolist() == [0.0, 15.0, 52.0, 130.0] and end.tolist() == [10.0, 19.0, 56.0, 135.0]


def test_rows_read_in_two_drains_continue_the_call_and_no_read_goes_twice():
    fed = batches()
    assert fed.join(np.array([20.0]))[0].tolist() == [0.0]
    begin, _ = fed.join(np.array([80.0, 57.0]))  # not in order, and in a later drain
    assert begin.tolist() == [52.0, 15.0]
    assert np.isnan(fed.join(np.array([90.0]))[0]).all()  # a fourth step in a call of three reads: none left


def test_a_row_outside_every_known_call_waits_for_its_callers_row_a_while():
    fed = batches()
    now = 10_000_000.0
    stamps = np.array([20.0, now - 10.0, now - PATIENCE_US - 10.0])
    assert fed.waiting(stamps, now).tolist() == [False, True, False]
    assert np.isnan(fed.join(stamps[1:])[0]).all()
