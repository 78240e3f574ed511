"""`npu_device.train`: the optimizer wrappers (`train.optimizer.NpuLossScaleOptimizer`)."""
from . import optimizer

__all__ = ["optimizer"]
