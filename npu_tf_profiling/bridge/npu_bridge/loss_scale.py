"""Loss scaling as Ascend scripts use it: `NPULossScaleOptimizer` and the loss-scale managers.

Ascend scripts train in mixed precision and wrap their optimizer as
`NPULossScaleOptimizer(opt, FixedLossScaleManager(...) or ExponentialUpdateLossScaleManager(...))`.
The contract kept here, with upstream's signatures and defaults:

* `compute_gradients` multiplies the loss by the scale and the gradients by 1/scale,
  so with finite gradients training equals plain training (to float rounding);
* `apply_gradients` skips the whole update when any gradient is inf/nan, and the
  manager then counts the overflow (shrinking the scale after
  `decr_every_n_nan_or_inf` of them) or the good step (growing it after
  `incr_every_n_steps` in a row);
* as upstream, a skipped step does not increment `global_step`: the wrapped
  optimizer's `apply_gradients`, which does the increment, only runs on good steps.

Departures from upstream, each because the NPU mechanism has no CPU/GPU counterpart:

* Overflow is detected from the gradients handed to `apply_gradients`
  (`is_finite`), not from the NPU's float-status register, which also flags
  overflows inside forward ops. A forward overflow that does not reach a gradient is
  therefore not a skipped step here.
* With `is_distributed=True` upstream all-reduces the float status over HCCL. Here
  the per-rank overflow flag goes through `overflow_across_ranks` (below), the one
  extension point the distributed layer fills in.
* The manager's variables are created outside any control-dependency context
  (`init_scope`), so creating a manager inside `tf.control_dependencies(...)`, a known
  upstream pitfall, works.
"""
from __future__ import annotations

import abc
import importlib
from typing import Any

import tensorflow.compat.v1 as tf1

DISTRIBUTED_MODULE = "npu_tf_profiling.bridge.ranks.data_parallel"
"""Module that may provide `overflow_across_ranks(flag)`; looked up lazily, at graph-building time."""

FLOAT32_MAX = 3.4e38
"""A growth that would pass this is not applied (upstream's bound), so the scale stays finite."""


def overflow_across_ranks(flag: tf1.Tensor) -> tf1.Tensor:
    """The extension point that makes the overflow decision agree across ranks.

    `flag` is this rank's decision: a scalar bool tensor, True when any of its gradients
    is inf/nan. `NPULossScaleOptimizer(..., is_distributed=True)` passes it here once
    per `apply_gradients` call, while the graph is built, and uses the returned scalar
    bool tensor as the decision to skip the update and to update the loss scale. Ranks
    must agree, or their weights drift apart: upstream sums the NPU float status over
    all ranks for that reason.

    The function `overflow_across_ranks(flag)` of `npu_tf_profiling.bridge.ranks.data_parallel`
    does the cross-rank reduction when that module provides it (True if any rank
    overflowed; it must return `flag` unchanged when the job has one rank). Without it,
    each process decides alone, which is exact for a single process.
    """
    try:
        distributed = importlib.import_module(DISTRIBUTED_MODULE)
    except ModuleNotFoundError as exc:
        if exc.name != DISTRIBUTED_MODULE:
            raise
        return flag
    combine = getattr(distributed, "overflow_across_ranks", None)
    return flag if combine is None else combine(flag)


class LossScaleManager(abc.ABC):
    """Decides the loss scale, and how it changes with each step's overflow result."""

    @abc.abstractmethod
    def get_loss_scale(self) -> Any:
        """The loss scale: a scalar float32 tensor or variable."""

    @abc.abstractmethod
    def update_loss_scale(self, finite_grads: tf1.Tensor) -> tf1.Operation:
        """An op that updates the scale; `finite_grads` is a scalar bool tensor, True when no gradient overflowed."""

    def variables(self) -> list:
        """The manager's state variables (none for a fixed scale); `NPULossScaleOptimizer.variables()` includes them."""
        return []


class FixedLossScaleManager(LossScaleManager):
    """A loss scale that never changes.

    `enable_overflow_check` is the newer upstream switch: False applies every update
    even when a gradient is inf/nan (no check at all), as upstream does.
    """

    def __init__(self, loss_scale: float, enable_overflow_check: bool = True) -> None:
        if loss_scale < 1:
            raise ValueError(f"FixedLossScaleManager: loss_scale must be at least 1, got {loss_scale!r}")
        self._loss_scale = float(loss_scale)
        self._enable_overflow_check = enable_overflow_check

    def get_loss_scale(self) -> tf1.Tensor:
        # A fresh constant in the caller's graph, so the manager is not tied to the
        # graph it was built in (upstream converts once, at construction).
        return tf1.constant(self._loss_scale, dtype=tf1.float32, name="loss_scale")

    def update_loss_scale(self, finite_grads: tf1.Tensor) -> tf1.Operation:
        del finite_grads
        return tf1.no_op(name="fixed_loss_scale_update")

    def get_enable_overflow_check(self) -> bool:
        return self._enable_overflow_check


class ExponentialUpdateLossScaleManager(LossScaleManager):
    """Grows the scale after a run of good steps, shrinks it after accumulated overflows.

    With finite gradients the good-step count goes up; at `incr_every_n_steps` the scale
    is multiplied by `incr_ratio` (unless that would pass the float32 range) and both
    counts reset. With an overflow the good-step count resets and the bad-step count
    goes up; at `decr_every_n_nan_or_inf` (which need not be consecutive) the scale is
    multiplied by `decr_ratio`, never below 1, and both counts reset.

    The state is three non-trainable global variables with upstream's names
    (`loss_scale`, `good_steps`, `bad_steps`), so checkpoints carry them as upstream's do.
    """

    def __init__(
        self,
        init_loss_scale: float,
        incr_every_n_steps: int,
        decr_every_n_nan_or_inf: int = 2,
        incr_ratio: float = 2,
        decr_ratio: float = 0.8,
    ) -> None:
        _require(init_loss_scale > 0, f"init_loss_scale must be > 0, got {init_loss_scale!r}")
        _require(incr_every_n_steps >= 1, f"incr_every_n_steps must be >= 1, got {incr_every_n_steps!r}")
        _require(decr_every_n_nan_or_inf >= 1, f"decr_every_n_nan_or_inf must be >= 1, got {decr_every_n_nan_or_inf!r}")
        _require(incr_ratio >= 1, f"incr_ratio must be >= 1, got {incr_ratio!r}")
        _require(0 < decr_ratio <= 1, f"decr_ratio must be in (0, 1], got {decr_ratio!r}")
        self._incr_every_n_steps = incr_every_n_steps
        self._decr_every_n_nan_or_inf = decr_every_n_nan_or_inf
        self._incr_ratio = float(incr_ratio)
        self._decr_ratio = float(decr_ratio)
        with tf1.init_scope():
            self._loss_scale = tf1.Variable(float(init_loss_scale), name="loss_scale", dtype=tf1.float32, trainable=False)
            self._num_good_steps = tf1.Variable(0, name="good_steps", dtype=tf1.int32, trainable=False)
            self._num_bad_steps = tf1.Variable(0, name="bad_steps", dtype=tf1.int32, trainable=False)

    def get_loss_scale(self) -> tf1.Variable:
        return self._loss_scale

    def variables(self) -> list:
        return [self._loss_scale, self._num_good_steps, self._num_bad_steps]

    def update_loss_scale(self, finite_grads: tf1.Tensor) -> tf1.Operation:
        """One step of the schedule, as `tf.cond` branches on the overflow result.

        Branches rather than element-wise selects: the overflow result then only decides
        which assignments run, it is not a value they write. Step-trace discovery
        (`graph_points`) relies on that to tell the optimizer's own updates (values computed
        from gradients) from this bookkeeping, so BP End stays the last gradient. Each branch
        writes only variables whose new value it reads from themselves, so the assignments
        cannot race.
        """

        def reset_counts() -> list:
            return [tf1.assign(self._num_good_steps, 0), tf1.assign(self._num_bad_steps, 0)]

        def after_good_step() -> tf1.Operation:
            def grow() -> tf1.Operation:
                scale = self._loss_scale.read_value()
                grown = tf1.where_v2(scale < FLOAT32_MAX / self._incr_ratio, scale * self._incr_ratio, scale)
                return tf1.group(tf1.assign(self._loss_scale, grown), *reset_counts())

            def count() -> tf1.Operation:
                return tf1.assign_add(self._num_good_steps, 1).op

            return tf1.cond(self._num_good_steps + 1 >= self._incr_every_n_steps, grow, count)

        def after_overflow() -> tf1.Operation:
            def shrink() -> tf1.Operation:
                shrunk = tf1.maximum(1.0, self._loss_scale.read_value() * self._decr_ratio)
                return tf1.group(tf1.assign(self._loss_scale, shrunk), *reset_counts())

            def count() -> tf1.Operation:
                return tf1.group(tf1.assign_add(self._num_bad_steps, 1), tf1.assign(self._num_good_steps, 0))

            return tf1.cond(self._num_bad_steps + 1 >= self._decr_every_n_nan_or_inf, shrink, count)

        with tf1.name_scope("update_loss_scale"):
            return tf1.cond(tf1.convert_to_tensor(finite_grads, dtype=tf1.bool), after_good_step, after_overflow)


class NPULossScaleOptimizer(tf1.train.Optimizer):
    """Wraps a `tf.compat.v1.train.Optimizer` with loss scaling and overflow skipping.

    Attributes not defined here (learning rate, hyper-parameters) are read from the
    wrapped optimizer, and slots are the wrapped optimizer's, as upstream delegates.
    """

    def __init__(self, opt: tf1.train.Optimizer, loss_scale_manager: LossScaleManager, is_distributed: bool = False) -> None:
        if not isinstance(loss_scale_manager, LossScaleManager):
            raise TypeError(
                "NPULossScaleOptimizer: loss_scale_manager must be a FixedLossScaleManager or "
                f"ExponentialUpdateLossScaleManager, got {type(loss_scale_manager).__name__}"
            )
        self._opt = opt
        self._loss_scale_manager = loss_scale_manager
        self._is_distributed = is_distributed
        super().__init__(use_locking=False, name=f"NPULossScaleOptimizer{type(opt).__name__}")

    def __getattr__(self, attr: str) -> Any:
        if attr == "_opt":  # not set yet: avoid recursing while __init__ runs
            raise AttributeError(attr)
        return getattr(self._opt, attr)

    def compute_gradients(
        self,
        loss,
        var_list=None,
        gate_gradients=tf1.train.Optimizer.GATE_OP,
        aggregation_method=None,
        colocate_gradients_with_ops=False,
        grad_loss=None,
    ):
        """The wrapped optimizer's gradients of loss*scale, multiplied back by 1/scale."""
        loss_scale = tf1.convert_to_tensor(self._loss_scale_manager.get_loss_scale(), dtype=tf1.float32)
        if callable(loss) and not tf1.executing_eagerly():
            loss = loss()  # built in the caller's name scope, like the forward pass it is
        scaled_loss = _scaled(loss, loss_scale)
        grads_and_vars = self._opt.compute_gradients(
            scaled_loss,
            var_list=var_list,
            gate_gradients=gate_gradients,
            aggregation_method=aggregation_method,
            colocate_gradients_with_ops=colocate_gradients_with_ops,
            grad_loss=grad_loss,
        )
        with tf1.name_scope("unscale_gradients"):
            inverse = tf1.math.reciprocal(loss_scale)
            return [(_times(g, inverse), v) for g, v in grads_and_vars]

    def apply_gradients(self, grads_and_vars, global_step=None, name=None):
        """Applies the update only if no gradient overflowed, and steps the loss-scale schedule with that result."""
        grads_and_vars = list(grads_and_vars)  # it may be a one-shot iterator such as zip(...)

        def apply() -> tf1.Operation:
            return self._opt.apply_gradients(grads_and_vars, global_step, name)

        if not self._checks_overflow():
            return apply()
        overflow = self._is_overflow([g for g, _ in grads_and_vars if g is not None])
        update_vars = tf1.cond(overflow, tf1.no_op, apply)
        return tf1.group(update_vars, self._loss_scale_manager.update_loss_scale(tf1.logical_not(overflow)))

    def _is_overflow(self, grads: list) -> tf1.Tensor:
        """The single overflow decision of a step: True when a gradient is inf/nan (on any rank if distributed)."""
        with tf1.name_scope("overflow_check"):
            finite = [tf1.reduce_all(tf1.math.is_finite(_values(g))) for g in grads]
            local = tf1.logical_not(tf1.reduce_all(tf1.stack(finite)) if finite else tf1.constant(True))
        return overflow_across_ranks(local) if self._is_distributed else local

    def _checks_overflow(self) -> bool:
        manager = self._loss_scale_manager
        return not isinstance(manager, FixedLossScaleManager) or manager.get_enable_overflow_check()

    def get_slot(self, var, name):
        return self._opt.get_slot(var, name)

    def get_slot_names(self):
        return self._opt.get_slot_names()

    def variables(self):
        """The wrapped optimizer's variables plus the loss-scale state.

        Whoever initializes or saves "the optimizer's variables" then gets the scale too:
        Keras' on-the-fly initialization does, when a script passes this optimizer to
        `model.compile` in TF1 mode.
        """
        return self._opt.variables() + self._loss_scale_manager.variables()


def _require(condition: bool, message: str) -> None:
    if not condition:
        raise ValueError(f"ExponentialUpdateLossScaleManager: {message}")


def _scaled(loss: Any, loss_scale: tf1.Tensor) -> Any:
    """loss*scale; a callable loss (eager mode) stays a callable, as the v1 optimizers expect there."""

    def scale(value: tf1.Tensor) -> tf1.Tensor:
        with tf1.name_scope("scale_loss"):
            return value * tf1.cast(loss_scale, value.dtype.base_dtype)

    return (lambda: scale(loss())) if callable(loss) else scale(loss)


def _times(grad: Any, factor: tf1.Tensor) -> Any:
    """grad*factor for dense and sparse (IndexedSlices) gradients; None stays None."""
    if grad is None:
        return None
    if isinstance(grad, tf1.IndexedSlices):
        return tf1.IndexedSlices(grad.values * tf1.cast(factor, grad.dtype.base_dtype), grad.indices, grad.dense_shape)
    return grad * tf1.cast(factor, grad.dtype.base_dtype)


def _values(grad: Any) -> tf1.Tensor:
    return grad.values if isinstance(grad, tf1.IndexedSlices) else grad
