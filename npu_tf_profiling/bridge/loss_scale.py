"""Loss scaling for Ascend scripts: NPULossScaleOptimizer and the loss-scale managers (skeleton)."""
from __future__ import annotations

import abc


class LossScaleManager(abc.ABC):
    """Decides the loss scale and how it changes with each step's overflow result."""

    @abc.abstractmethod
    def get_loss_scale(self):
        """The loss scale as a scalar float32 tensor."""

    @abc.abstractmethod
    def update_loss_scale(self, finite_grads):
        """An op that updates the scale given a bool scalar tensor (True: all gradients finite)."""


class FixedLossScaleManager(LossScaleManager):
    def __init__(self, loss_scale, enable_overflow_check=True):
        raise NotImplementedError("being written on branch bridge-ops")

    def get_loss_scale(self):
        raise NotImplementedError

    def update_loss_scale(self, finite_grads):
        raise NotImplementedError

    def get_enable_overflow_check(self):
        raise NotImplementedError


class ExponentialUpdateLossScaleManager(LossScaleManager):
    def __init__(self, init_loss_scale, incr_every_n_steps, decr_every_n_nan_or_inf=2, incr_ratio=2, decr_ratio=0.8):
        raise NotImplementedError("being written on branch bridge-ops")

    def get_loss_scale(self):
        raise NotImplementedError

    def update_loss_scale(self, finite_grads):
        raise NotImplementedError


class NPULossScaleOptimizer:
    def __init__(self, opt, loss_scale_manager, is_distributed=False):
        raise NotImplementedError("being written on branch bridge-ops")
