"""`npu_bridge.estimator.npu.npu_loss_scale_optimizer`: NPULossScaleOptimizer (and the managers, as upstream imports them)."""
from npu_tf_profiling.bridge.npu_bridge.loss_scale import (
    ExponentialUpdateLossScaleManager,
    FixedLossScaleManager,
    LossScaleManager,
    NPULossScaleOptimizer,
)

__all__ = ["NPULossScaleOptimizer", "LossScaleManager", "FixedLossScaleManager", "ExponentialUpdateLossScaleManager"]
