"""`tf.contrib.mixed_precision`: loss scaling, which npu_bridge's loss-scale classes were derived from.

contrib's `LossScaleOptimizer(opt, loss_scale_manager)` and its two managers
have the same arguments and overflow-skipping meaning as npu_bridge's, so the
same implementation (bridge/npu_bridge/loss_scale.py) serves both.
"""
from __future__ import annotations

from npu_tf_profiling.bridge.npu_bridge.loss_scale import (ExponentialUpdateLossScaleManager, FixedLossScaleManager,
                                                LossScaleManager, NPULossScaleOptimizer)

LossScaleOptimizer = NPULossScaleOptimizer

__all__ = ["ExponentialUpdateLossScaleManager", "FixedLossScaleManager", "LossScaleManager", "LossScaleOptimizer"]
