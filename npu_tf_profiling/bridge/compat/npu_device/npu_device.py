"""`npu_device.npu_device`: upstream's module of the device functions (`global_npu_ctx` is read from here)."""
from npu_tf_profiling.bridge.npu_device.handle import NpuDeviceHandle, enable_v1, global_npu_ctx, open
from npu_tf_profiling.bridge.npu_device.options import global_options

from . import gen_npu_ops

__all__ = ["open", "global_options", "global_npu_ctx", "enable_v1", "gen_npu_ops", "NpuDeviceHandle"]
