"""`npu_device` (Ascend's TF2 adapter) served by npu_tf_profiling on CPU/GPU TensorFlow (see docs/npu_device_surface.md)."""
from npu_tf_profiling.bridge.npu_device.handle import open
from npu_tf_profiling.bridge.npu_device.options import NpuConfig as Config
from npu_tf_profiling.bridge.npu_device.options import global_options

from . import compat, distribute, gen_npu_ops, npu_device, ops, train

__all__ = ["open", "global_options", "Config", "gen_npu_ops", "npu_device", "distribute", "compat", "train", "ops"]
