"""`npu_device.train.optimizer`: Keras' LossScaleOptimizer with upstream's `last_step_finite`."""
from npu_tf_profiling.bridge.npu_device.keras_loss_scale import NpuLossScaleOptimizer

__all__ = ["NpuLossScaleOptimizer"]
