"""util.set_iteration_per_loop runs n real iterations per sess.run; the other util/scope/config names."""
from __future__ import annotations

import numpy as np
import pytest
import tensorflow as tf

from npu_tf_profiling.bridge.compat.npu_bridge import tf_adapter
from npu_tf_profiling.bridge.npu_bridge.estimator import NPURunConfig
from npu_tf_profiling.bridge.npu_bridge.graph_util import set_graph_exec_config, variable_initializer_in_host
from npu_tf_profiling.bridge.npu_bridge.iteration_loop import IterationPerLoop, set_iteration_per_loop
from npu_tf_profiling.bridge.npu_bridge.npu_configs import DumpConfig, GraphMemoryOptimizeConfig
from npu_tf_profiling.bridge.npu_bridge.scopes import NpuExecutePlacement, keep_dtype_scope, npu_variable_scope, without_npu_compile_scope
from npu_tf_profiling.bridge.npu_bridge.strategy import NPUStrategy
from npu_tf_profiling.bridge.npu_bridge.session_config import npu_config_proto
from npu_tf_profiling.config import ProfilingConfig
from tests.helpers.models import session_mlp
from tests.helpers.trace_files import step_trace_rows

v1 = tf.compat.v1


def _counting_graph():
    """A dataset-fed step: each run adds the next element (1, 2, 3...) to `total` and bumps the global step."""
    graph = tf.Graph()
    with graph.as_default():
        element = v1.data.make_one_shot_iterator(tf.data.Dataset.range(1, 1000)).get_next()
        total = v1.get_variable("total", initializer=tf.constant(0, tf.int64))
        step = v1.train.get_or_create_global_step()
        train_op = tf.group(v1.assign_add(total, element), v1.assign_add(step, 1))
    return graph, element, total, step, train_op


def test_set_iteration_per_loop_runs_n_iterations_per_call_and_returns_the_last_ones_values() -> None:
    graph, element, total, step, train_op = _counting_graph()
    with graph.as_default(), v1.Session(graph=graph) as sess:
        sess.run(v1.global_variables_initializer())
        loop = set_iteration_per_loop(sess, train_op, 4)
        assert loop.name == "IterationOp" and loop.type == "NoOp" and train_op in loop.control_inputs
        fetched, _ = sess.run([element, loop])
        assert fetched == 4 and sess.run([total, step]) == [1 + 2 + 3 + 4, 4]
        fetched = sess.run({"e": element, "op": loop})["e"]
        assert fetched == 8 and sess.run(step) == 8
        sess.run(train_op)  # the train op on its own is one iteration
        assert sess.run(step) == 9
        assert sess.run("IterationOp") is None and sess.run(step) == 13  # by name too


def test_iterations_per_loop_of_one_two_step_form_and_errors() -> None:
    graph, element, total, step, train_op = _counting_graph()
    with graph.as_default(), v1.Session(graph=graph) as sess:
        sess.run(v1.global_variables_initializer())
        assert set_iteration_per_loop(sess, train_op, 1) is train_op
        with pytest.raises(ValueError, match="the need type is 'Operation'"):
            set_iteration_per_loop(sess, total, 2)
        with pytest.raises(ValueError, match="iterations_per_loop must be a positive integer, got 0"):
            set_iteration_per_loop(sess, train_op, 0)
        two_step = IterationPerLoop()
        loop = two_step.create_iteration_per_loop_var(train_op)
        two_step.load_iteration_per_loop_var(sess, 3)
        sess.run(loop)
        assert sess.run(step) == 3


def test_a_profiled_session_records_every_iteration_of_the_loop(tmp_path) -> None:
    graph = tf.Graph()
    train_op, loss, init, _ = session_mlp(graph)
    options = f'{{"output": "{tmp_path}", "training_trace": "on"}}'
    with v1.Session(graph=graph, config=npu_config_proto(profiling_config=ProfilingConfig(True, options))) as sess:
        sess.run(init)
        loop = set_iteration_per_loop(sess, train_op, 5)
        for _ in range(3):
            sess.run([loss, loop])
    _, rows = step_trace_rows(tmp_path)
    assert [row["Iteration ID"] for row in rows] == [str(i) for i in range(1, 16)]


def test_util_graph_helpers() -> None:
    with tf.Graph().as_default():
        table = v1.get_variable("host_table", initializer=np.ones((4, 2), np.float32))
        init = variable_initializer_in_host([table])
        assert init.name == "var_in_host"
        with v1.Session() as sess:
            sess.run(init)
            assert sess.run(table).sum() == 8
        loss = tf.reduce_sum(table)
        with pytest.warns(RuntimeWarning, match="set_graph_exec_config"):
            assert set_graph_exec_config(loss, dynamic_input=True) is loss
        with pytest.raises(ValueError, match="lazy_recompile or dynamic_execute"):
            set_graph_exec_config(loss, dynamic_graph_execute_mode="eager")


def _graph_def_built(scope) -> bytes:
    graph = tf.Graph()
    with graph.as_default(), scope:
        tf.matmul(tf.ones((2, 2)), tf.ones((2, 2)), name="product")
    return graph.as_graph_def().SerializeToString(deterministic=True)


def test_npu_scopes_build_the_same_graph() -> None:
    import contextlib

    plain = _graph_def_built(contextlib.nullcontext())
    assert _graph_def_built(without_npu_compile_scope()) == plain
    assert _graph_def_built(keep_dtype_scope()) == plain
    assert _graph_def_built(npu_variable_scope(placement=NpuExecutePlacement.HOST)) == plain
    assert NpuExecutePlacement("host") is NpuExecutePlacement.HOST


def test_npu_configs_keep_their_values_and_npu_run_config_accepts_them(tmp_path) -> None:
    dump = DumpConfig(enable_dump=True, dump_path=str(tmp_path), dump_step="0|5", dump_mode="all")
    assert (dump.enable_dump, dump.dump_step, dump.dump_mode, dump.dump_debug_mode) == (True, "0|5", "all", "all")
    with pytest.warns(RuntimeWarning, match="dump_config accepted, no effect"):
        NPURunConfig(dump_config=dump, model_dir=str(tmp_path))
    with pytest.raises(ValueError, match="recompute should be in"):
        GraphMemoryOptimizeConfig(recompute="sometimes")


def test_npu_strategy_is_a_one_device_strategy_on_this_machine() -> None:
    strategy = NPUStrategy()
    assert isinstance(strategy, v1.distribute.OneDeviceStrategy) and strategy.num_replicas_in_sync == 1
    expected = "GPU" if tf.config.list_physical_devices("GPU") else "CPU"
    assert strategy.extended.worker_devices[0].endswith(f"{expected}:0")
    assert NPUStrategy(device="/cpu:0").extended.worker_devices[0].endswith("CPU:0")


def test_tf_adapter_has_dtype_constants_only() -> None:
    assert tf_adapter.DT_FLOAT == tf.float32 and tf_adapter.DT_INT64 == tf.int64
    with pytest.raises(AttributeError, match="npu_bridge.tf_adapter.PluginInit is part of Ascend's native adapter"):
        tf_adapter.PluginInit
