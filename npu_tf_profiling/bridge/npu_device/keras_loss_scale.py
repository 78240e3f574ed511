"""`npu_device.train.optimizer.NpuLossScaleOptimizer`: Keras' LossScaleOptimizer plus `last_step_finite`.

Upstream subclasses TF 2.6's `tf.keras.mixed_precision.LossScaleOptimizer` and
reads the NPU's float-status registers to decide whether a step's gradients
were finite; scripts read `opt.last_step_finite` to log skipped steps. Keras
2.15 splits that class in two (one for legacy optimizers, one for the new
ones) and picks one in its metaclass, so a plain subclass would never be
built. Here the same choice is made for this class: the result is an instance
of Keras' matching LossScaleOptimizer (so Keras trains it as its own: same
updates, same loss-scale schedule) and of `NpuLossScaleOptimizer`. The finite
check is `tf.math.is_finite` over the gradients, which is what the NPU status
registers report. Keras 3 has neither class; there this name raises on use.
"""
from __future__ import annotations

from typing import Any

import tensorflow as tf

from npu_tf_profiling.runtime import tf_private

# Keras 2 (TensorFlow 2.15); Keras 3 has neither module.
_keras_lso = tf_private.optional_module(tf_private.KERAS_LOSS_SCALE_MODULE)
_legacy = tf_private.optional_module(tf_private.KERAS_LEGACY_OPTIMIZER_MODULE)


def _all_finite(grads: list[Any]) -> tf.Tensor:
    checks = [tf.reduce_all(tf.math.is_finite(tf.convert_to_tensor(g))) for g in grads if g is not None]
    return tf.reduce_all(tf.stack(checks)) if checks else tf.constant(True)


class _LastStepFinite:
    """Adds upstream's `last_step_finite` variable, set by every `apply_gradients`."""

    def _npu_init(self) -> None:
        self._last_step_finite = tf.Variable(False, name="npu_last_step_finite", trainable=False, dtype=tf.bool)

    @property
    def last_step_finite(self) -> tf.Variable:
        return self._last_step_finite

    def apply_gradients(self, grads_and_vars: Any, *args: Any, **kwargs: Any) -> Any:
        grads_and_vars = tuple(grads_and_vars)
        self._last_step_finite.assign(_all_finite([g for g, _ in grads_and_vars]))
        return super().apply_gradients(grads_and_vars, *args, **kwargs)


if _keras_lso is not None and _legacy is not None:

    class _Chooser(_keras_lso.LossScaleOptimizerMetaclass):
        """Builds the subclass that matches the inner optimizer, as Keras' own metaclass does."""

        def __call__(cls, inner_optimizer: Any, *args: Any, **kwargs: Any) -> Any:
            if cls is not NpuLossScaleOptimizer:
                instance = super().__call__(inner_optimizer, *args, **kwargs)
                instance._npu_init()
                return instance
            legacy = isinstance(inner_optimizer, _legacy.OptimizerV2)
            return (_NpuLossScaleOptimizerV2 if legacy else _NpuLossScaleOptimizerV3)(inner_optimizer, *args, **kwargs)

    class NpuLossScaleOptimizer(_keras_lso.BaseLossScaleOptimizer, metaclass=_Chooser):
        """Upstream's NpuLossScaleOptimizer(inner_optimizer, dynamic=True, initial_scale=None, dynamic_growth_steps=None)."""

    class _NpuLossScaleOptimizerV2(_LastStepFinite, NpuLossScaleOptimizer, _keras_lso.LossScaleOptimizer):
        pass

    class _NpuLossScaleOptimizerV3(_LastStepFinite, NpuLossScaleOptimizer, _keras_lso.LossScaleOptimizerV3):
        pass

else:  # pragma: no cover - Keras 3

    class NpuLossScaleOptimizer:  # type: ignore[no-redef]
        """Not served on Keras 3: upstream's class is a Keras 2 LossScaleOptimizer subclass."""

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            raise NotImplementedError("npu_device.train.optimizer.NpuLossScaleOptimizer needs Keras 2 (TensorFlow <= 2.15); "
                                      "on Keras 3 use keras.optimizers.LossScaleOptimizer")
