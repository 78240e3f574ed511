"""`npu_bridge.estimator.npu.npu_loss_scale_manager`: the loss-scale managers."""
from npu_tf_profiling.bridge.npu_bridge.loss_scale import ExponentialUpdateLossScaleManager, FixedLossScaleManager, LossScaleManager

__all__ = ["LossScaleManager", "FixedLossScaleManager", "ExponentialUpdateLossScaleManager"]
