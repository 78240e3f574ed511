"""Runs on whatever TensorFlow is installed: 2.15.1 in `make test`, 2.21 in `make check-latest`.

On TensorFlow without tf.estimator the package must still import, the Session/env
paths must resolve profiling, and the Estimator-only names must fail with a
message naming the TensorFlow version and what to install.
"""
from __future__ import annotations

import importlib.util
import subprocess
import sys
import textwrap

import pytest
import tensorflow as tf

from npu_tf_profiling.config import EstimatorUnavailableError, resolve_profiling
from npu_tf_profiling.bridge.npu_bridge.estimator import NPUEstimator, NPUEstimatorSpec, NPURunConfig, npu_config_proto, npu_run_config_init
from npu_tf_profiling.config.session_proto import write_request

HAS_ESTIMATOR = importlib.util.find_spec("tensorflow_estimator") is not None


def test_npu_init_star_import_works() -> None:
    done = subprocess.run([sys.executable, "-c", "from npu_tf_profiling.npu_init import *; print(tf.__version__)"], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == tf.__version__


def test_session_path_resolves(tmp_path) -> None:
    config = npu_config_proto()
    write_request(config, True, f'{{"output": "{tmp_path}", "training_trace": "on"}}')
    got = resolve_profiling(config, {})
    assert got is not None and got.source == "session" and got.output_dir == tmp_path


def test_env_path_profiles_a_plain_session_script(tmp_path) -> None:
    """PROFILING_MODE/PROFILING_OPTIONS alone: the script never imports npu_tf_profiling."""
    script = textwrap.dedent(
        """
        import tensorflow.compat.v1 as tf
        tf.disable_eager_execution()
        import numpy as np
        x = tf.data.Dataset.from_tensor_slices(np.ones([64, 4], np.float32)).batch(8).repeat()
        batch = tf.data.make_one_shot_iterator(x).get_next()
        w = tf.get_variable("w", [4, 1])
        loss = tf.reduce_mean(tf.matmul(batch, w) ** 2)
        step = tf.train.get_or_create_global_step()
        train = tf.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=step)
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            for _ in range(5):
                sess.run(train)
        print("npu_tf_profiling" in __import__("sys").modules)
        """
    )
    env = {"PROFILING_MODE": "true", "PROFILING_OPTIONS": f'{{"output": "{tmp_path}", "training_trace": "on"}}', "PATH": "/usr/bin:/bin", "TF_CPP_MIN_LOG_LEVEL": "2"}
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=180, env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "True"
    csvs = list(tmp_path.glob("PROF_*/mindstudio_profiler_output/step_trace_*.csv"))
    assert len(csvs) == 1
    assert len(csvs[0].read_text().strip().splitlines()) == 1 + 5


@pytest.mark.skipif(HAS_ESTIMATOR, reason="this TensorFlow has tf.estimator")
@pytest.mark.parametrize("api", [NPURunConfig, NPUEstimator, NPUEstimatorSpec, npu_run_config_init])
def test_estimator_only_apis_fail_clearly(api) -> None:  # pragma: no cover - runs under `make check-latest`
    with pytest.raises(EstimatorUnavailableError) as info:
        api()
    message = str(info.value)
    assert tf.__version__ in message and "tensorflow==2.15.1" in message and "sess.run" in message


@pytest.mark.skipif(not HAS_ESTIMATOR, reason="this TensorFlow has no tf.estimator")
def test_estimator_apis_exist_where_estimator_does() -> None:
    assert issubclass(NPURunConfig, tf.estimator.RunConfig)
