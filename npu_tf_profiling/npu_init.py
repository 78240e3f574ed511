"""`from npu_tf_profiling.npu_init import *`: the profiling-related surface of `npu_bridge.npu_init`.

Upstream targets TensorFlow 1.15, where `tf` is the v1 API; scripts written for it
use `tf.ConfigProto`, `tf.Session`, `tf.app`... So `tf` here is
`tensorflow.compat.v1`, and a star import placed after
`import tensorflow.compat.v1 as tf` leaves `tf` meaning the same thing.
"""
import tensorflow.compat.v1 as tf
from tensorflow.core.protobuf import config_pb2, rewriter_config_pb2
from tensorflow.core.protobuf.rewriter_config_pb2 import RewriterConfig
from tensorflow.python.training import session_run_hook

from npu_tf_profiling.config import ProfilingConfig
from npu_tf_profiling.bridge.estimator import (
    NPUEstimator,
    NPUEstimatorSpec,
    NPURunConfig,
    npu_config_proto,
    npu_hooks_append,
    npu_run_config_init,
)

__all__ = [
    "tf",
    "RewriterConfig",
    "config_pb2",
    "rewriter_config_pb2",
    "session_run_hook",
    "ProfilingConfig",
    "NPURunConfig",
    "NPUEstimator",
    "NPUEstimatorSpec",
    "npu_config_proto",
    "npu_run_config_init",
    "npu_hooks_append",
]
