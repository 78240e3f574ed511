"""`npu_device.ops`: `gelu` (the tanh form the NPU kernel computes), as `npu_unary_ops.gelu` in the TF1 adapter."""
from npu_tf_profiling.bridge.npu_bridge.npu_ops import gelu

__all__ = ["gelu"]
