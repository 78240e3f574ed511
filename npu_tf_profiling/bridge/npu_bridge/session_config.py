"""Session configuration helpers of `npu_bridge.npu_init`: the NpuOptimizer entry, and what else they change.

Upstream, these put the `NpuOptimizer` custom optimizer in the `ConfigProto`
(that is what hands a session to the Ascend adapter) and also:

- set `allow_soft_placement=True`: kept. It means the same here (an op without a
  GPU kernel runs on the CPU instead of failing).
- set `log_device_placement=False`: kept (a log setting; same meaning).
- turn Grappler's `remapping` (op fusion) and `memory_optimization` off: NOT
  copied. The NPU compiler does its own fusion and memory planning; on CPU/GPU
  these passes make training faster or leaner, and turning them off would slow it.
- set the XLA `global_jit_level` to OFF: NOT copied. The NPU does not use XLA; on
  CPU/GPU it is off by default already, and a script that switched it on meant to.

The entry itself is also how profiling is requested in a `ConfigProto`
(`profiling_mode`/`profiling_options`), so writing it keeps that contract.
"""
from __future__ import annotations

from typing import Any

import tensorflow as tf
from tensorflow.core.protobuf import config_pb2

from npu_tf_profiling.config.profiling_config import ProfilingConfig
from npu_tf_profiling.config.session_proto import read_request, write_request


def npu_config_proto(config_proto: Any = None, profiling_config: ProfilingConfig | None = None) -> config_pb2.ConfigProto:
    """Upstream's `npu_config_proto(config_proto=None)`: the given ConfigProto (changed in place) or a new one.

    It gets the NpuOptimizer entry and `allow_soft_placement`. `profiling_config`
    (ours) writes a profiling request into the entry; without it an existing
    request is kept and profiling otherwise follows the environment variables.
    """
    config = config_proto if isinstance(config_proto, config_pb2.ConfigProto) else config_pb2.ConfigProto()
    if profiling_config is not None:
        write_request(config, profiling_config.enable_profiling, profiling_config.profiling_options)
    else:
        existing = read_request(config)
        write_request(config, existing.profiling_mode, existing.profiling_options)
    config.allow_soft_placement = True
    config.log_device_placement = False
    return config


def npu_session_config_init(session_config: Any = None) -> config_pb2.ConfigProto:
    """The session config ModelZoo's migration tool generates: a ConfigProto with the NpuOptimizer entry."""
    return npu_config_proto(session_config)


def npu_graph_options(graph_options: Any = None) -> config_pb2.GraphOptions:
    """Upstream only turns XLA's jit off here; on CPU/GPU the options are returned as given (or new)."""
    return graph_options if isinstance(graph_options, config_pb2.GraphOptions) else config_pb2.GraphOptions()


def npu_optimizer_options(optimizer_options: Any = None) -> config_pb2.OptimizerOptions:
    """Upstream only turns XLA's jit off here; on CPU/GPU the options are returned as given (or new)."""
    if isinstance(optimizer_options, config_pb2.OptimizerOptions):
        return optimizer_options
    return config_pb2.OptimizerOptions()


def set_keras_session_npu_config(config: Any = None) -> tf.compat.v1.Session:
    """A session with the NpuOptimizer config, made the Keras (graph mode) session, and returned."""
    session = tf.compat.v1.Session(config=npu_config_proto(config))
    tf.compat.v1.keras.backend.set_session(session)
    return session


def npu_clear_session(config: Any = None) -> None:
    """Reset Keras' graph and give it a fresh session with the NpuOptimizer config."""
    tf.compat.v1.keras.backend.clear_session()
    tf.compat.v1.keras.backend.set_session(tf.compat.v1.Session(config=npu_config_proto(config)))
