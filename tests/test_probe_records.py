"""The probe vector -> raw record encoding (the per-step hot path) produces the layout's JSON exactly."""
from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from npu_tf_profiling.raw_format.training_record import parse_record
from npu_tf_profiling.runtime.probes import ProbeLayout


@given(
    get_next=st.integers(0, 3), fp=st.booleans(), bp=st.booleans(), reduce=st.integers(0, 3), step=st.booleans(),
    base=st.floats(1.6e9, 2.0e9), run=st.integers(1, 10**9),
)
def test_record_line_is_the_layout_json(get_next, fp, bp, reduce, step, base, run) -> None:
    layout = ProbeLayout(get_next, fp, bp, reduce, step)
    n_times = 2 * get_next + fp + bp + 2 * reduce + 1
    seconds = base + np.arange(n_times) * 1e-3
    vector = np.append(seconds, [41.0]) if step else seconds
    record = json.loads(layout.record_line(7, run, vector))
    us = [round(v * 1e6, 1) for v in seconds.tolist()]
    assert record["model_id"] == 7 and record["run"] == run
    assert record["get_next"] == [us[2 * i : 2 * i + 2] for i in range(get_next)]
    at = 2 * get_next
    assert record["fp_start"] == (us[at] if fp else None)
    at += fp
    assert record["bp_end"] == (us[at] if bp else None)
    at += bp
    assert record["reduce"] == [us[at + 2 * i : at + 2 * i + 2] for i in range(reduce)]
    assert record["iteration_end"] == pytest.approx(us[-1], abs=0.06)
    assert record["step"] == (41 if step else None)
    assert layout.step(vector) == (41 if step else None)
    parse_record(record)  # what the reports accept
