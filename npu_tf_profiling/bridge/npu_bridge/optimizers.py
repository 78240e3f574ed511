"""Optimizer helpers of `npu_init` and `npu_optimizer`: npu_tf_optimizer, npu_keras_optimizer, NPUOptimizer.

They compose the two real pieces: gradient all-reduce across ranks
(`ranks.data_parallel`; with one process the wrapped optimizer's own update, bit for
bit) and loss scaling (`loss_scale`).
"""
from __future__ import annotations

from typing import Any

import tensorflow as tf

from npu_tf_profiling.bridge.ranks.data_parallel import NPUDistributedOptimizer, npu_distributed_optimizer_wrapper
from npu_tf_profiling.bridge.npu_bridge.loss_scale import NPULossScaleOptimizer
from npu_tf_profiling.bridge.notes import note_once


def npu_tf_optimizer(opt: tf.compat.v1.train.Optimizer) -> NPUDistributedOptimizer:
    """Upstream: `NPUDistributedOptimizer(opt)` (gradients all-reduced across ranks)."""
    return NPUDistributedOptimizer(opt)


def KerasDistributeOptimizer(optimizer: Any, name: str = "NpuKerasOptimizer", **kwargs: Any) -> Any:
    """Upstream's Keras optimizer wrapper (a class there): here the same Keras optimizer, its gradients
    averaged over all ranks by `npu_distributed_optimizer_wrapper`; with one rank, `optimizer` untouched.

    Returning the optimizer itself keeps every Keras code path (fit, minimize,
    serialisation) that a subclass would have to re-implement.
    """
    return npu_distributed_optimizer_wrapper(optimizer)


def npu_keras_optimizer(opt: Any) -> Any:
    """Upstream: `KerasDistributeOptimizer(opt)` for a Keras optimizer."""
    return KerasDistributeOptimizer(opt)


class NPUOptimizer(tf.compat.v1.train.Optimizer):
    """Upstream's all-in-one optimizer: optional all-reduce (`is_distributed`) and loss scaling (`is_loss_scale`).

    It behaves as `NPULossScaleOptimizer(NPUDistributedOptimizer(opt), ...)`,
    the composition ModelZoo scripts also write by hand. Communication tailing
    (`is_tailing_optimization`) only reorders HCCL work on the NPU; it is noted.
    """

    def __init__(self, opt: tf.compat.v1.train.Optimizer, loss_scale_manager: Any = None, is_distributed: bool = False,
                 is_loss_scale: bool = False, is_tailing_optimization: bool = False, name: str | None = None) -> None:
        if is_loss_scale and loss_scale_manager is None:
            raise ValueError("is_loss_scale is True, loss_scale_manager can not be None")
        if is_tailing_optimization:
            note_once("NPUOptimizer(is_tailing_optimization=True)", "HCCL communication tailing has no CPU/GPU meaning")
        super().__init__(use_locking=False, name=name or f"NPUOptimizer{type(opt).__name__}")
        inner: Any = NPUDistributedOptimizer(opt) if is_distributed else opt
        if is_loss_scale:
            inner = NPULossScaleOptimizer(inner, loss_scale_manager, is_distributed=is_distributed)
        self._opt = opt
        self._inner = inner

    def compute_gradients(self, *args: Any, **kwargs: Any) -> Any:
        return self._inner.compute_gradients(*args, **kwargs)

    def apply_gradients(self, *args: Any, **kwargs: Any) -> Any:
        return self._inner.apply_gradients(*args, **kwargs)

    def get_slot(self, *args: Any, **kwargs: Any) -> Any:
        return self._opt.get_slot(*args, **kwargs)

    def get_slot_names(self, *args: Any, **kwargs: Any) -> Any:
        return self._opt.get_slot_names(*args, **kwargs)

    def variables(self) -> list:
        return self._inner.variables()
