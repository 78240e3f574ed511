"""A user's fp_point/bp_point at run time: a typo never stops training; points a dynamic edit cannot apply are said."""
from __future__ import annotations

import json
import time
import warnings

import pytest
import tensorflow.compat.v1 as tf

from npu_tf_profiling.graph_points import TracePointsError, find_trace_points
from npu_tf_profiling.runtime import dynamic
from tests.helpers.models import profiling_config, session_mlp
from tests.helpers.trace_files import assert_step_trace_formulas, only_prof_dir, step_trace_rows


def info_of(output) -> dict:
    return json.loads(next(only_prof_dir(output).glob("device_*/info.json")).read_text())


def test_misspelt_points_fall_back_to_the_automatic_ones_and_training_finishes(tmp_path) -> None:
    graph = tf.Graph()
    train_op, loss, init, _ = session_mlp(graph)
    automatic = find_trace_points(graph)
    with pytest.raises(TracePointsError):  # the name-checking tool still refuses the typo
        find_trace_points(graph, fp_point="dense/MatMull")
    losses = []
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        with tf.Session(graph=graph, config=profiling_config(tmp_path, fp_point="dense/MatMull", bp_point="gradients/nope")) as sess:
            sess.run(init)
            for _ in range(6):
                losses.append(sess.run([train_op, loss])[1])
    assert len(losses) == 6  # training ran every step
    notes = [str(w.message) for w in caught if "is not an op in this graph" in str(w.message)]
    assert len(notes) == 2, notes  # one per field, shown once
    fp_note = next(n for n in notes if "fp_point 'dense/MatMull'" in n)
    assert "'dense/MatMul'" in fp_note and fp_note.count("', '") == 4  # the five closest names
    assert f"the automatic fp_point {automatic.fp}" in fp_note
    assert all(w.filename == __file__ for w in caught if "is not an op" in str(w.message))  # the user's line

    info = info_of(tmp_path)
    model = info["models"]["1"]
    assert (model["fp"], model["bp"]) == (automatic.fp, automatic.bp)
    fallback = model["trace_points_fallback"]
    assert fallback["fp_point"]["asked"] == "dense/MatMull" and fallback["fp_point"]["used"] == automatic.fp
    assert fallback["bp_point"]["asked"] == "gradients/nope" and fallback["bp_point"]["used"] == automatic.bp
    assert "closest op names" in fallback["fp_point"]["reason"]
    _, rows = step_trace_rows(tmp_path)
    assert len(rows) == 6
    assert_step_trace_formulas(rows)  # FP/BP measured at the automatic points, not N/A


@pytest.mark.timeout(60)
def test_dynamic_config_points_are_applied_or_logged(tmp_path, monkeypatch) -> None:
    """Points in the file when the graph first runs are wired in; a later edit of them is logged, not dropped."""
    config = tmp_path / "profiler_config.json"
    output = tmp_path / "out"
    config.write_text(json.dumps({"output": str(output), "training_trace": "on", "fp_point": "dense/BiasAdd"}))
    monkeypatch.setenv("PROFILING_MODE", "dynamic")
    monkeypatch.setenv("PROFILING_DYNAMIC_CONFIG", str(config))
    monkeypatch.setattr(dynamic, "POLL_INTERVAL_S", 0.0)  # every check looks at the file: the reader's next drain sees the edit
    graph = tf.Graph()
    train_op, _, init, _ = session_mlp(graph)
    automatic = find_trace_points(graph)
    with tf.Session(graph=graph) as sess:
        sess.run(init)
        for _ in range(3):
            sess.run(train_op)
        start = 10
        config.write_text(json.dumps({"output": str(output), "training_trace": "on", "fp_point": "dense/BiasAdd",
                                      "bp_point": "gradients/logits/MatMul_grad/MatMul_1", "start_step": start, "stop_step": start + 2}))
        controller = dynamic.controller_for(config)
        deadline = time.monotonic() + 60
        while controller.state is not dynamic.DynamicState.COLLECTING:  # the ring reader drains (and polls) every 0.5 s
            assert time.monotonic() < deadline, "the edit was not loaded in 60 s"
            time.sleep(0.05)
        for _ in range(12):
            sess.run(train_op)
    _, rows = step_trace_rows(output)
    assert [int(r["Iteration ID"]) for r in rows] == [start, start + 1, start + 2]
    model = info_of(output)["models"]["1"]
    assert model["fp"] == "dense/BiasAdd"  # applied: it was in the file when the probes were wired
    assert model["bp"] == automatic.bp != "gradients/logits/MatMul_grad/MatMul_1"
    fallback = model["trace_points_fallback"]
    assert list(fallback) == ["bp_point"]
    assert fallback["bp_point"]["asked"] == "gradients/logits/MatMul_grad/MatMul_1"
    assert fallback["bp_point"]["used"] == automatic.bp
    assert "cannot be rewired" in fallback["bp_point"]["reason"]
    log = next((tmp_path / "log").glob("monitor_dp_*.log")).read_text()
    assert "[WARNING]" in log and "bp_point 'gradients/logits/MatMul_grad/MatMul_1' not applied" in log
