"""`from npu_bridge.npu_init import *`: the names upstream's star import gives a script.

Upstream's module has no `__all__`, so the star import hands over everything it
imported, including `os` and `tf` (TensorFlow 1.15, i.e. the v1 API). A script
usually writes `import tensorflow as tf` before it, and the star import then
replaces `tf`; so `tf` here is the v1 API too (the `--tf1` namespace when the
launcher runs with `--tf1`). `npu_tf_profiling.npu_init` gives the same names.

Importing npu_tf_profiling (which this does) also installs the Session
integration, as importing upstream's npu_init wraps `Session.__init__`.
"""
import os

from tensorflow.core.protobuf import config_pb2, rewriter_config_pb2
from tensorflow.core.protobuf.rewriter_config_pb2 import RewriterConfig
from tensorflow.python.client import session
from tensorflow.python.training import session_run_hook

from npu_tf_profiling.bridge.ranks.data_parallel import (
    NPUBroadcastGlobalVariablesHook,
    NPUDistributedOptimizer,
    npu_distributed_optimizer_wrapper,
)
from npu_tf_profiling.bridge.npu_bridge.estimator import NPUEstimator, NPUEstimatorSpec, NPURunConfig, npu_run_config_init
from npu_tf_profiling.bridge.ranks.groups import create_group, destroy_group, set_split_strategy_by_idx, set_split_strategy_by_size
from npu_tf_profiling.bridge.npu_bridge.hooks import NpuEmptyHook, npu_hooks_append
from npu_tf_profiling.bridge.npu_bridge.loss_scale import ExponentialUpdateLossScaleManager, FixedLossScaleManager, NPULossScaleOptimizer
from npu_tf_profiling.bridge.npu_bridge.npu_configs import DumpConfig, DynamicInputConfig, ExperimentalConfig, MemoryConfig
from npu_tf_profiling.bridge.npu_bridge.optimizers import KerasDistributeOptimizer, NPUOptimizer, npu_keras_optimizer, npu_tf_optimizer
from npu_tf_profiling.bridge.ranks.discovery import (
    get_local_rank_id,
    get_local_rank_size,
    get_npu_local_rank_id,
    get_npu_local_rank_size,
    get_npu_rank_id,
    get_npu_rank_size,
    get_rank_id,
    get_rank_size,
)
from npu_tf_profiling.bridge.npu_bridge.session_config import (
    npu_clear_session,
    npu_config_proto,
    npu_graph_options,
    npu_optimizer_options,
    npu_session_config_init,
    set_keras_session_npu_config,
)
from npu_tf_profiling.bridge.npu_bridge.system import close_session, init_resource, shutdown_resource
from npu_tf_profiling.bridge.launch.tf1_api import v1_namespace
from npu_tf_profiling.config import ProfilingConfig

from .estimator import npu_ops
from .estimator.npu import npu_plugin, npu_scope, npu_strategy, util
from .estimator.npu_unary_ops import npu_unary_ops
from .hccl import hccl_ops

tf = v1_namespace()

__all__ = [
    "os",
    "tf",
    # protobufs and TensorFlow modules upstream re-exports
    "config_pb2",
    "rewriter_config_pb2",
    "RewriterConfig",
    "session",
    "session_run_hook",
    # configuration and Estimator
    "NPURunConfig",
    "ProfilingConfig",
    "DumpConfig",
    "MemoryConfig",
    "ExperimentalConfig",
    "DynamicInputConfig",
    "NPUEstimator",
    "NPUEstimatorSpec",
    "npu_run_config_init",
    "npu_config_proto",
    "npu_session_config_init",
    "npu_graph_options",
    "npu_optimizer_options",
    "set_keras_session_npu_config",
    "npu_clear_session",
    # sessions and device start/stop
    "init_resource",
    "shutdown_resource",
    "close_session",
    # hooks
    "npu_hooks_append",
    "NpuEmptyHook",
    "NPUBroadcastGlobalVariablesHook",
    # optimizers
    "NPUDistributedOptimizer",
    "NPUOptimizer",
    "KerasDistributeOptimizer",
    "npu_distributed_optimizer_wrapper",
    "npu_tf_optimizer",
    "npu_keras_optimizer",
    "NPULossScaleOptimizer",
    "FixedLossScaleManager",
    "ExponentialUpdateLossScaleManager",
    # ranks and groups
    "get_rank_id",
    "get_rank_size",
    "get_local_rank_id",
    "get_local_rank_size",
    "get_npu_rank_id",
    "get_npu_rank_size",
    "get_npu_local_rank_id",
    "get_npu_local_rank_size",
    "create_group",
    "destroy_group",
    "set_split_strategy_by_idx",
    "set_split_strategy_by_size",
    # modules
    "npu_ops",
    "npu_unary_ops",
    "npu_scope",
    "npu_strategy",
    "npu_plugin",
    "util",
    "hccl_ops",
]
