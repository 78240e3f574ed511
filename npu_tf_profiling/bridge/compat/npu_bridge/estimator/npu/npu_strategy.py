"""`npu_bridge.estimator.npu.npu_strategy`: NPUStrategy, a one-device strategy on the local CPU/GPU."""
from npu_tf_profiling.bridge.npu_bridge.strategy import NPUStrategy

__all__ = ["NPUStrategy"]
