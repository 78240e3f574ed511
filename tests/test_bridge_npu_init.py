"""The npu_init helpers on plain TensorFlow: session configs, sessions, hooks, optimizer wrappers, notes."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest
import tensorflow as tf
from tensorflow.core.protobuf import config_pb2, rewriter_config_pb2

from npu_tf_profiling.bridge.ranks.data_parallel import NPUBroadcastGlobalVariablesHook
from npu_tf_profiling.bridge.npu_bridge.hooks import NpuEmptyHook, npu_hooks_append
from npu_tf_profiling.bridge.npu_bridge.loss_scale import FixedLossScaleManager
from npu_tf_profiling.bridge.npu_bridge.optimizers import KerasDistributeOptimizer, NPUOptimizer, npu_keras_optimizer, npu_tf_optimizer
from npu_tf_profiling.bridge.npu_bridge.session_config import (
    npu_config_proto,
    npu_graph_options,
    npu_optimizer_options,
    npu_session_config_init,
    set_keras_session_npu_config,
)
from npu_tf_profiling.bridge.npu_bridge.system import close_session, init_resource, npu_resource_init, shutdown_resource
from npu_tf_profiling.config import ProfilingConfig
from npu_tf_profiling.config.session_proto import read_request

OFF = rewriter_config_pb2.RewriterConfig.OFF
ON = rewriter_config_pb2.RewriterConfig.ON


def _npu_entries(config: config_pb2.ConfigProto) -> int:
    return sum(1 for c in config.graph_options.rewrite_options.custom_optimizers if c.name == "NpuOptimizer")


def test_npu_config_proto_keeps_upstreams_cpu_gpu_effects_and_not_the_npu_only_ones() -> None:
    config = config_pb2.ConfigProto(log_device_placement=True)
    config.graph_options.rewrite_options.remapping = ON
    config.graph_options.optimizer_options.global_jit_level = config_pb2.OptimizerOptions.ON_1
    returned = npu_config_proto(config_proto=config)
    assert returned is config  # changed in place and returned, as upstream
    assert _npu_entries(config) == 1 and read_request(config).present and not read_request(config).profiling_mode
    assert config.allow_soft_placement and not config.log_device_placement
    rewrite = config.graph_options.rewrite_options
    assert rewrite.remapping == ON and rewrite.memory_optimization == 0  # Grappler passes are not turned off
    assert config.graph_options.optimizer_options.global_jit_level == config_pb2.OptimizerOptions.ON_1
    assert _npu_entries(npu_config_proto(config)) == 1  # idempotent


def test_npu_config_proto_keeps_a_profiling_request_and_builds_new_configs() -> None:
    config = npu_config_proto(profiling_config=ProfilingConfig(True, '{"training_trace": "on"}'))
    assert read_request(npu_config_proto(config)).profiling_mode
    for made in (npu_config_proto(), npu_config_proto("not a proto"), npu_session_config_init()):
        assert isinstance(made, config_pb2.ConfigProto) and _npu_entries(made) == 1 and made.allow_soft_placement
    given = config_pb2.ConfigProto(inter_op_parallelism_threads=3)
    assert npu_session_config_init(given) is given and _npu_entries(given) == 1


def test_graph_and_optimizer_options_are_returned_unchanged() -> None:
    graph_options = config_pb2.GraphOptions()
    graph_options.optimizer_options.global_jit_level = config_pb2.OptimizerOptions.ON_2
    assert npu_graph_options(graph_options) is graph_options
    assert graph_options.optimizer_options.global_jit_level == config_pb2.OptimizerOptions.ON_2
    optimizer_options = config_pb2.OptimizerOptions(do_function_inlining=True)
    assert npu_optimizer_options(optimizer_options) is optimizer_options and optimizer_options.do_function_inlining
    assert npu_graph_options() == config_pb2.GraphOptions() and npu_optimizer_options() == config_pb2.OptimizerOptions()


def test_keras_session_init_resource_and_close_session() -> None:
    with tf.Graph().as_default():
        session = set_keras_session_npu_config(config_pb2.ConfigProto(inter_op_parallelism_threads=2))
        assert tf.compat.v1.keras.backend.get_session() is session
        assert _npu_entries(session._config) == 1 and session._config.inter_op_parallelism_threads == 2
        close_session(session)
        assert session._closed
    with tf.Graph().as_default():
        with pytest.warns(RuntimeWarning, match="init_resource: no NPU to open"):
            npu_sess, npu_shutdown = init_resource()
        assert isinstance(npu_shutdown, tf.Operation) and npu_sess.run(npu_shutdown) is None
        assert npu_sess.run(tf.constant(2.0) * 3) == 6.0  # a real, working session
        shutdown_resource(npu_sess, npu_shutdown)
        close_session(npu_sess)


def test_npu_hooks_append_adds_the_broadcast_hook_only_with_several_ranks(monkeypatch: pytest.MonkeyPatch) -> None:
    hooks = [NpuEmptyHook()]
    assert npu_hooks_append(hooks) is hooks and len(hooks) == 1
    assert npu_hooks_append() == [] and npu_hooks_append(hooks_list=None) == []
    monkeypatch.setenv("RANK_SIZE", "2")
    monkeypatch.setenv("RANK_ID", "1")
    appended = npu_hooks_append(hooks)
    assert appended is hooks and len(hooks) == 2 and isinstance(hooks[1], NPUBroadcastGlobalVariablesHook)
    assert isinstance(NpuEmptyHook(), tf.compat.v1.train.SessionRunHook)


def _train(wrap, steps: int = 5) -> list[np.ndarray]:
    rng = np.random.default_rng(3)
    with tf.Graph().as_default():
        x = tf.constant(np.linspace(-1, 1, 24, dtype=np.float32).reshape(8, 3))
        y = tf.constant(np.arange(8, dtype=np.float32).reshape(8, 1))
        w1 = tf.compat.v1.get_variable("w1", initializer=rng.normal(size=(3, 4)).astype(np.float32))
        w2 = tf.compat.v1.get_variable("w2", initializer=rng.normal(size=(4, 1)).astype(np.float32))
        loss = tf.reduce_mean(tf.square(tf.matmul(tf.nn.relu(tf.matmul(x, w1)), w2) - y))
        train_op = wrap(tf.compat.v1.train.AdamOptimizer(0.01)).minimize(loss)
        with tf.compat.v1.Session() as sess:
            sess.run(tf.compat.v1.global_variables_initializer())
            for _ in range(steps):
                sess.run(train_op)
            return sess.run(tf.compat.v1.trainable_variables())


def test_npu_tf_optimizer_is_bit_identical_to_the_wrapped_optimizer_in_one_process() -> None:
    plain, wrapped = _train(lambda opt: opt), _train(npu_tf_optimizer)
    assert all(np.array_equal(a, b) for a, b in zip(plain, wrapped, strict=True))
    assert not np.array_equal(plain[0], _train(lambda opt: opt, steps=4)[0])  # the steps did change the weights


def test_npu_optimizer_composes_all_reduce_and_loss_scaling() -> None:
    plain = _train(lambda opt: opt)
    distributed = _train(lambda opt: NPUOptimizer(opt, is_distributed=True, is_tailing_optimization=True))
    assert all(np.array_equal(a, b) for a, b in zip(plain, distributed, strict=True))
    scaled = _train(lambda opt: NPUOptimizer(opt, FixedLossScaleManager(1024), is_distributed=True, is_loss_scale=True))
    assert all(np.allclose(a, b, rtol=1e-5, atol=1e-6) for a, b in zip(plain, scaled, strict=True))
    with pytest.raises(ValueError, match="is_loss_scale is True, loss_scale_manager can not be None"):
        NPUOptimizer(tf.compat.v1.train.GradientDescentOptimizer(0.1), is_loss_scale=True)


def test_npu_keras_optimizer_is_the_keras_optimizer_itself_in_one_process() -> None:
    sgd = tf.keras.optimizers.SGD(0.1)
    assert npu_keras_optimizer(sgd) is sgd and KerasDistributeOptimizer(sgd, name="NpuKerasOptimizer") is sgd
    assert isinstance(npu_keras_optimizer("adam"), tf.keras.optimizers.Adam)


def test_npu_resource_init_turns_profiling_on_for_the_process(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("PROFILING_MODE", "PROFILING_OPTIONS"):  # setenv first: monkeypatch then restores the variables
        monkeypatch.setenv(name, "")
        monkeypatch.delenv(name)
    with pytest.raises(ValueError, match="profiling_options must be set"):
        npu_resource_init(enable_profiling=True)
    npu_resource_init(graph_run_mode=1)
    assert "PROFILING_MODE" not in os.environ
    npu_resource_init(enable_profiling=True, profiling_options='{"output": "/tmp/p", "training_trace": "on"}')
    assert os.environ["PROFILING_MODE"] == "true" and '"training_trace": "on"' in os.environ["PROFILING_OPTIONS"]


NOTES_SCRIPT = """\
import warnings
warnings.simplefilter("always")
import tensorflow.compat.v1 as tf
tf.disable_eager_execution()
from npu_tf_profiling.npu_init import *
from npu_tf_profiling.bridge.compat.hccl.split.api import set_split_strategy_by_idx
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    for _ in range(3):
        npu_ops.initialize_system(); npu_ops.shutdown_system()
        with npu_scope.without_npu_compile_scope():
            pass
        DumpConfig(enable_dump=True)
        set_split_strategy_by_idx([8, 16])
for warning in caught:
    print(warning.category.__name__, warning.filename.rsplit("/", 1)[-1], str(warning.message))
"""


def test_no_op_names_note_once_per_process_at_the_callers_line(tmp_path) -> None:
    path = tmp_path / "notes.py"
    path.write_text(NOTES_SCRIPT)
    done = subprocess.run([sys.executable, str(path)], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "TF_CPP_MIN_LOG_LEVEL": "2"})
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert [line.split(": ")[1] for line in lines] == [
        "npu_ops.initialize_system", "npu_ops.shutdown_system", "npu_scope.without_npu_compile_scope", "DumpConfig",
        "set_split_strategy_by_idx",
    ]
    assert all(line.startswith("NpuNoOpNote notes.py npu_tf_profiling: ") for line in lines), lines


def test_npu_only_kernels_raise_naming_the_op_and_an_alternative() -> None:
    from npu_tf_profiling.bridge import kernels
    from npu_tf_profiling.bridge.notes import NpuOnlyOpError

    with pytest.raises(NpuOnlyOpError, match=r"npu_ops\.LARS is an Ascend NPU kernel .* use the LARS trust ratio written with tf\.norm"):
        kernels.LARS(inputs_w=[], inputs_g=[], weight_decay=0.0001)
    with pytest.raises(NotImplementedError, match=r"hccl_ops\.remote_read .* tf\.nn\.embedding_lookup"):
        kernels.remote_read(None, data_type=tf.float32)
    with pytest.raises(NpuOnlyOpError, match=r"npu_cpu_ops\.embeddingrankid .* tf\.math\.floormod"):
        kernels.embeddingrankid(None, None, row_memory=4)
    assert kernels.basic_lstm_cell.__name__ == "basic_lstm_cell" and "BasicLSTMCell" in kernels.basic_lstm_cell.__doc__


def test_star_import_tf_is_the_v1_api() -> None:
    namespace: dict = {}
    exec(textwrap.dedent("""\
        import tensorflow as tf
        from npu_tf_profiling.npu_init import *
    """), namespace)
    assert namespace["tf"] is tf.compat.v1 and namespace["RewriterConfig"] is rewriter_config_pb2.RewriterConfig
