"""Starting and stopping the "NPU system": sessions stay real, device set-up is a noted no-op.

Upstream opens the Ascend device with `npu_ops.initialize_system()` (or
`init_resource()`, `npu_plugin.npu_resource_init()`) and closes it at the end.
CPU/GPU TensorFlow needs neither, so these accept upstream's arguments, return
what upstream returns (an op a script can `sess.run`, a real session), and note
once that nothing was opened. Process-wide profiling requested through
`npu_resource_init(enable_profiling=True, ...)` is honoured through the
PROFILING_MODE/PROFILING_OPTIONS variables, which is what it means upstream:
every session after it is profiled.
"""
from __future__ import annotations

import os
from typing import Any

import tensorflow as tf

from npu_tf_profiling.bridge.notes import accepted_no_op, note_once
from npu_tf_profiling.bridge.npu_bridge.session_config import npu_config_proto
from npu_tf_profiling.config.resolution import ENV_MODE, ENV_OPTIONS

_NO_DEVICE = "no NPU to open or close on CPU/GPU; returns an op that does nothing"


@accepted_no_op("npu_ops.initialize_system", _NO_DEVICE)
def initialize_system(name: str | None = None) -> tf.Operation:
    return tf.no_op(name=name or "NPUInit")


@accepted_no_op("npu_ops.shutdown_system", _NO_DEVICE)
def shutdown_system(name: str | None = None) -> tf.Operation:
    return tf.no_op(name=name or "NPUShutdown")


NPUInit = initialize_system
NPUShutdown = shutdown_system


@accepted_no_op("init_resource", "no NPU to open on CPU/GPU; returns a real session (NpuOptimizer config) and a no-op shutdown op")
def init_resource(config: Any = None) -> tuple[tf.compat.v1.Session, tf.Operation]:
    """Upstream: open the device and return `(session, shutdown_op)`; the session here is a plain one."""
    session = tf.compat.v1.Session(config=npu_config_proto(config))
    return session, tf.no_op(name="NPUShutdown")


@accepted_no_op("shutdown_resource", "no NPU to close on CPU/GPU; the session stays open until close_session")
def shutdown_resource(sess: Any, npu_shutdown: Any) -> None:
    """Upstream runs the shutdown op here; there is no device to release."""


def close_session(sess: Any) -> None:
    """Close the session (as upstream)."""
    sess.close()


def npu_resource_init(graph_run_mode: int = 1, op_debug_level: int = 0, enable_profiling: bool = False,
                      profiling_options: str | None = None, precision_mode: str | None = None,
                      enable_scope_fusion_passes: str | None = None, enable_exception_dump: int = 2,
                      aoe_mode: str | None = None, work_path: str | None = None, op_compiler_cache_mode: str | None = None,
                      op_compiler_cache_dir: str | None = None, debug_dir: str | None = None, hcom_multi_mode: bool = False,
                      distribute_config: str | None = None, aoe_config_file: str | None = None,
                      precision_mode_v2: str | None = None) -> None:
    """`npu_plugin.npu_resource_init`: only the profiling request means something on CPU/GPU.

    Upstream sets it for the whole process; here it becomes PROFILING_MODE=true
    and PROFILING_OPTIONS, so every session created afterwards is profiled.
    """
    if not isinstance(enable_profiling, bool):
        raise TypeError(f"npu_resource_init: enable_profiling must be a bool, got {enable_profiling!r}")
    if enable_profiling:
        if profiling_options is None:
            raise ValueError("npu_resource_init: profiling_options must be set when enable_profiling is True")
        os.environ[ENV_MODE] = "true"
        os.environ[ENV_OPTIONS] = str(profiling_options)
    note_once("npu_plugin.npu_resource_init", "no NPU to open on CPU/GPU; only enable_profiling/profiling_options apply")


@accepted_no_op("npu_plugin.npu_resource_shutdown", "no NPU to close on CPU/GPU")
def npu_resource_shutdown() -> None:
    """Nothing to release."""


@accepted_no_op("npu_plugin.npu_close", "no NPU to close on CPU/GPU")
def npu_close() -> None:
    """Nothing to release."""


@accepted_no_op("npu_plugin.set_device_sat_mode", "NPU saturation mode has no CPU/GPU meaning")
def set_device_sat_mode(mode: int) -> None:
    """Ascend float saturation mode: not applicable."""
