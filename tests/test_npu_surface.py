"""The npu_bridge-style surface: ProfilingConfig, NPURunConfig, helpers, and the npu_init star import."""
from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
import tensorflow as tf

from npu_tf_profiling.config import ProfilingConfig, ProfilingDeprecationWarning, ProfilingOptionsError
from npu_tf_profiling.bridge.npu_bridge.estimator import NPUEstimator, NPURunConfig, npu_run_config_init
from npu_tf_profiling.bridge.npu_bridge.hooks import npu_hooks_append
from npu_tf_profiling.bridge.npu_bridge.session_config import npu_config_proto
from npu_tf_profiling.config.session_proto import read_request


def test_profiling_config_rejects_non_bool() -> None:
    with pytest.raises(TypeError, match="enable_profiling must be a bool, got 'true'"):
        ProfilingConfig(enable_profiling="true")  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        ProfilingConfig(enable_profiling=1)  # type: ignore[arg-type]


def test_profiling_config_validates_when_built() -> None:
    with pytest.raises(ProfilingOptionsError, match=r"ProfilingConfig profiling_options: option 'training_trace': invalid value 'yes'"):
        ProfilingConfig(enable_profiling=True, profiling_options='{"training_trace": "yes"}')
    with pytest.raises(ProfilingOptionsError, match="option 'fp_point'"):
        ProfilingConfig(enable_profiling=False, profiling_options={"fp_point": 3})


def test_profiling_config_emits_legacy_notes_once_built() -> None:
    with pytest.warns(ProfilingDeprecationWarning, match="'result_path' is deprecated; use 'output'"):
        config = ProfilingConfig(True, '{"result_path": "/tmp/p", "training_trace": "on"}')
    assert config.profiling_options == '{"output": "/tmp/p", "training_trace": "on"}'


def test_npu_run_config_writes_the_npu_optimizer_entry(tmp_path) -> None:
    user_config = tf.compat.v1.ConfigProto(inter_op_parallelism_threads=2)
    config = NPURunConfig(
        profiling_config=ProfilingConfig(True, f'{{"output": "{tmp_path}", "training_trace": "on"}}'),
        session_config=user_config,
        model_dir=str(tmp_path / "model"),
    )
    assert isinstance(config, tf.estimator.RunConfig)
    request = read_request(config.session_config)
    assert request.present and request.profiling_mode
    assert '"training_trace": "on"' in request.profiling_options
    assert config.session_config.inter_op_parallelism_threads == 2
    assert not read_request(user_config).present  # the caller's proto is not modified
    assert config.iterations_per_loop == 1 and config.save_summary_steps == 0


def test_npu_run_config_argument_errors(tmp_path) -> None:
    with pytest.raises(TypeError, match="profiling_config must be a ProfilingConfig"):
        NPURunConfig(profiling_config={"enable_profiling": True})
    with pytest.raises(ValueError, match="iterations_per_loop must be a positive int"):
        NPURunConfig(iterations_per_loop=0)
    with pytest.raises(TypeError, match="unexpected keyword argument.*not_a_knob"):
        NPURunConfig(not_a_knob=1)
    with pytest.warns(RuntimeWarning, match="precision_mode accepted, no effect on CPU/GPU"):
        NPURunConfig(precision_mode="allow_mix_precision")
    with pytest.warns(RuntimeWarning, match="iterations_per_loop=100 accepted, no effect on CPU/GPU"):
        assert NPURunConfig(iterations_per_loop=100).iterations_per_loop == 100


def test_helpers() -> None:
    proto = npu_config_proto(profiling_config=ProfilingConfig(True, '{"training_trace":"on"}'))
    assert read_request(proto).profiling_mode
    assert read_request(npu_config_proto()).present and not read_request(npu_config_proto()).profiling_mode
    hooks = ["h"]
    assert npu_hooks_append(hooks) == ["h"] and npu_hooks_append() == []
    run_config = npu_run_config_init(tf.estimator.RunConfig(model_dir="/tmp/m"))
    assert read_request(run_config.session_config).present and run_config.model_dir == "/tmp/m"


def test_npu_estimator_is_an_estimator(tmp_path) -> None:
    est = NPUEstimator(model_fn=lambda features, labels, mode: None, model_dir=str(tmp_path))
    assert isinstance(est, tf.compat.v1.estimator.Estimator)  # upstream targets the v1 API
    assert read_request(est.config.session_config).present


def test_star_import_keeps_tf_v1_usable() -> None:
    """A star import after `import tensorflow.compat.v1 as tf` must not break tf.app, tf.Session..."""
    code = textwrap.dedent(
        """
        import tensorflow.compat.v1 as tf
        from npu_tf_profiling.npu_init import *
        import npu_tf_profiling.npu_init as m
        assert tf is m.tf
        assert tf.Session is tf.compat.v1.Session and callable(tf.app.run) and tf.ConfigProto
        assert RewriterConfig.OFF == rewriter_config_pb2.RewriterConfig.OFF
        assert config_pb2.ConfigProto is tf.ConfigProto
        assert session_run_hook.SessionRunHook is tf.train.SessionRunHook
        for name in ["ProfilingConfig", "NPURunConfig", "NPUEstimator", "NPUEstimatorSpec", "npu_config_proto",
                     "npu_run_config_init", "npu_hooks_append"]:
            assert name in dir(), name
        print("ok")
        """
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().endswith("ok")
