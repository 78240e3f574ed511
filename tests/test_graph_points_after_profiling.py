"""Graphs saved after a profiled run give the points they gave before it: the probes are not the model.

A profiled run adds its stamps and their vector (a sink waiting on the train op)
to the training graph; every graph written afterwards carries them. Discovery,
in files and in memory, must leave them out.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import tensorflow.compat.v1 as tf

from npu_tf_profiling.bridge.npu_bridge.estimator import NPURunConfig
from npu_tf_profiling.config import ProfilingConfig
from npu_tf_profiling.cli import main
from npu_tf_profiling.graph_points import find_trace_points, load_graph
from npu_tf_profiling.graph_points.own_ops import PROBE_SCOPE, is_own_op, without_own_ops
from tests.helpers.models import input_fn, mlp_model_fn, session_mlp
from tests.helpers.trace_files import only_prof_dir

pytestmark = pytest.mark.filterwarnings("ignore:.*is deprecated:UserWarning")


def session_config(output: Path) -> tf.ConfigProto:
    config = tf.ConfigProto()
    custom = config.graph_options.rewrite_options.custom_optimizers.add()
    custom.name = "NpuOptimizer"
    custom.parameter_map["profiling_mode"].b = True
    custom.parameter_map["profiling_options"].s = json.dumps({"output": str(output), "training_trace": "on"}).encode()
    return config


def assert_no_own_names(points: dict) -> None:
    named = [points["fp"], points["bp"], points["iteration_end"], points["global_step"], *points["get_next"]]
    assert not [n for n in named if n and PROBE_SCOPE in n], points
    assert not [r for r in points["reasons"] if PROBE_SCOPE in r], points["reasons"]


def test_session_graph_written_after_training(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    graph = tf.Graph()
    train_op, _, init_op, _ = session_mlp(graph)
    before = find_trace_points(graph)
    with tf.Session(graph=graph, config=session_config(tmp_path / "prof")) as sess:
        sess.run(init_op)
        for _ in range(3):
            sess.run(train_op)
        tf.io.write_graph(graph.as_graph_def(), str(tmp_path), "graph.pbtxt")
    assert any(op.name.startswith(PROBE_SCOPE + "/") for op in graph.get_operations())  # the run did profile
    assert only_prof_dir(tmp_path / "prof")

    in_memory = find_trace_points(graph)
    assert in_memory.to_dict() == before.to_dict()
    assert main(["points", str(tmp_path / "graph.pbtxt"), "--json"]) == 0
    from_file = json.loads(capsys.readouterr().out)["points"]
    assert_no_own_names(from_file)
    assert from_file["iteration_end"] == before.iteration_end
    assert (from_file["fp"], from_file["bp"]) == (before.fp, before.bp)
    assert main(["points", str(tmp_path / "graph.pbtxt")]) == 0
    assert f"iteration_end:  {before.iteration_end}  (" in capsys.readouterr().out


def test_estimator_checkpoint_meta_after_profiled_training(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    profiling = ProfilingConfig(True, json.dumps({"output": str(tmp_path / "prof"), "training_trace": "on"}))
    config = NPURunConfig(profiling_config=profiling, model_dir=str(tmp_path / "model"), log_step_count_steps=None)
    tf.estimator.Estimator(model_fn=mlp_model_fn, config=config).train(input_fn=input_fn(), steps=3)
    meta = tmp_path / "model" / "model.ckpt-3.meta"
    assert PROBE_SCOPE.encode() in meta.read_bytes()  # the checkpoint holds the probes
    for path in (meta, tmp_path / "model" / "graph.pbtxt"):
        assert main(["points", str(path), "--json"]) == 0
        points = json.loads(capsys.readouterr().out)["points"]
        assert_no_own_names(points)
        assert points["fp"] == "dense/MatMul" and points["iteration_end"]
        assert load_graph(path).graph_def.node  # and the loaded GraphDef itself holds none of ours
        assert not [n.name for n in load_graph(path).graph_def.node if is_own_op(n.name)]


def test_own_op_names_under_user_scopes_and_repeated_builds() -> None:
    assert is_own_op("npu_tf_profiling_probes/vector")
    assert is_own_op("npu_tf_profiling_probes_2/fp_start")  # the second build in one graph
    assert is_own_op("tower_0/npu_tf_profiling_probes/bp_end")  # built under a user's name scope
    assert is_own_op("^npu_tf_profiling_probes/get_next_start")  # a control input
    assert is_own_op("npu_tf_profiling_probes/vector:0")
    assert not is_own_op("npu_tf_profiling_probes_model/dense/MatMul")  # a user's scope that only looks alike
    assert not is_own_op("dense/MatMul")


def test_cleaning_keeps_the_callers_graph_def_and_drops_edges_to_own_ops() -> None:
    graph = tf.Graph()
    with graph.as_default():
        x = tf.constant(1.0, name="x")
        with tf.name_scope(PROBE_SCOPE):
            stamp = tf.timestamp(name="stamp")
        with tf.control_dependencies([stamp]):
            tf.identity(x, name="y")
    graph_def = graph.as_graph_def()
    cleaned = without_own_ops(graph_def)
    assert [n.name for n in cleaned.node] == ["x", "y"]
    assert list(cleaned.node[1].input) == ["x"]
    assert cleaned.versions == graph_def.versions
    assert len(graph_def.node) == 3 and f"^{PROBE_SCOPE}/stamp" in graph_def.node[2].input  # untouched
    plain = tf.Graph()
    with plain.as_default():
        tf.constant(1.0, name="x")
    plain_def = plain.as_graph_def()
    assert without_own_ops(plain_def) is plain_def  # nothing of ours: no copy
