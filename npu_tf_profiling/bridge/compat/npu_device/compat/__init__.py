"""`npu_device.compat`: `enable_v1()` (TensorFlow 1.x graph behaviour) and `compat.v1.npu_init`."""
from npu_tf_profiling.bridge.npu_device.handle import enable_v1

from . import v1

__all__ = ["enable_v1", "v1"]
