"""`npu_bridge.estimator.npu_ops`: dropout (real), system start/stop (no-ops), NPU-only kernels (raise when called)."""
from npu_tf_profiling.bridge.kernels import LARS, LARSV2, adam_apply_one_assign, adam_apply_one_with_decay_assign, basic_lstm_cell
from npu_tf_profiling.bridge.npu_bridge.npu_ops import dropout
from npu_tf_profiling.bridge.npu_bridge.system import NPUInit, NPUShutdown, initialize_system, shutdown_system

__all__ = [
    "dropout",
    "initialize_system",
    "shutdown_system",
    "NPUInit",
    "NPUShutdown",
    "LARS",
    "LARSV2",
    "basic_lstm_cell",
    "adam_apply_one_assign",
    "adam_apply_one_with_decay_assign",
]
