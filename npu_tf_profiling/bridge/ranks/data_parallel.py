"""Data-parallel training as Ascend scripts write it: `NPUDistributedOptimizer`, the wrapper, `allreduce`,
the variable broadcast hook, and the overflow decision shared by all ranks.

Upstream averages each gradient with its own `HcomAllReduce`. Here the gradients
are packed, as MultiWorkerMirroredStrategy packs them: flattened and concatenated
per dtype, averaged by one `CollectiveReduceV2` (merge Add, final Div), and split
back. Every rank receives the same bytes, so weights stay identical on every rank
when they start identical, which `NPUBroadcastGlobalVariablesHook` ensures.

With one rank (`RANK_SIZE` unset or 1) every name here returns exactly what the
wrapped optimizer returns: the graph has no extra op, training is bit-identical.

Departures from upstream:

* `is_weight_update_sharding=True` (each rank updates a share of the variables,
  then broadcasts them) is accepted and computed as a plain all-reduce: the
  weights are the same, only the memory saving is not reproduced.
* Sparse gradients (`IndexedSlices`) are averaged dense. Upstream gathers their
  values and indices; dense keeps one collective for all gradients.
* The broadcast hook copies every global variable (upstream: the trainable ones),
  so optimizer slots, the global step and loss-scale state agree as well, e.g.
  after rank 0 alone restored a checkpoint.
"""
from __future__ import annotations

import warnings
from typing import Any

import tensorflow as tf

from npu_tf_profiling.bridge.ranks.graph_collectives import broadcast_packed, can_carry, collective_setup, reduce_packed
from npu_tf_profiling.bridge.ranks.discovery import (  # re-exported: upstream's npu_init hands them out with the optimizer
    get_local_rank_id,
    get_local_rank_size,
    get_npu_local_rank_id,
    get_npu_local_rank_size,
    get_npu_rank_id,
    get_npu_rank_size,
    get_rank_id,
    get_rank_size,
)

__all__ = [
    "NPUBroadcastGlobalVariablesHook",
    "NPUDistributedOptimizer",
    "allreduce",
    "broadcast_global_variables",
    "get_local_rank_id",
    "get_local_rank_size",
    "get_npu_local_rank_id",
    "get_npu_local_rank_size",
    "get_npu_rank_id",
    "get_npu_rank_size",
    "get_rank_id",
    "get_rank_size",
    "npu_distributed_optimizer_wrapper",
    "overflow_across_ranks",
]

_WRAPPED = "__npu_tf_profiling_averaged__"


def allreduce(tensor: Any, average: bool = True) -> Any:
    """Upstream's `npu_optimizer.allreduce`: the mean (or sum) of `tensor` over all ranks.

    `tensor` may be a tensor, a variable, an IndexedSlices (averaged dense), a list
    of them, or a list of (gradient, variable) pairs; lists are reduced with one
    collective per dtype and come back in the same form.
    """
    if isinstance(tensor, (list, tuple)):
        pairs = [item if isinstance(item, tuple) and len(item) == 2 else (item, None) for item in tensor]
        reduced = _reduced_grads(pairs, average)
        return [(g, v) if isinstance(item, tuple) and len(item) == 2 else g for item, (g, v) in zip(tensor, reduced)]
    ((reduced, _),) = _reduced_grads([(tensor, None)], average)
    return reduced


class NPUDistributedOptimizer(tf.compat.v1.train.Optimizer):
    """Wraps a `tf.compat.v1.train.Optimizer`: gradients are averaged over all ranks before they are applied.

    Slots and variables are the wrapped optimizer's, as upstream delegates them.
    """

    def __init__(self, optimizer: Any, is_weight_update_sharding: bool = False, name: str | None = None) -> None:
        self._optimizer = optimizer
        self._is_weight_update_sharding = is_weight_update_sharding
        super().__init__(use_locking=False, name=name or f"Distributed{type(optimizer).__name__}")

    def compute_gradients(self, *args: Any, **kwargs: Any) -> list:
        """The wrapped optimizer's gradients, averaged over all ranks (one collective per dtype)."""
        gradients = self._optimizer.compute_gradients(*args, **kwargs)
        setup = collective_setup()
        if setup is None:
            return gradients
        if self._is_weight_update_sharding and setup.rank_size > len(gradients):
            raise ValueError("The number of gradients is less than rank_size, so weight_update_sharding cannot be executed")
        with tf.name_scope(f"{self._name}_Allreduce"):
            return _reduced_grads(gradients, average=True)

    def apply_gradients(self, grads_and_vars: Any, global_step: Any = None, name: str | None = None) -> Any:
        return self._optimizer.apply_gradients(grads_and_vars, global_step, name)

    def get_slot(self, *args: Any, **kwargs: Any) -> Any:
        return self._optimizer.get_slot(*args, **kwargs)

    def get_slot_names(self, *args: Any, **kwargs: Any) -> Any:
        return self._optimizer.get_slot_names(*args, **kwargs)

    def variables(self, *args: Any, **kwargs: Any) -> Any:
        return self._optimizer.variables(*args, **kwargs)


def npu_distributed_optimizer_wrapper(optimizer: Any) -> Any:
    """Upstream's wrapper: the same optimizer object, its gradient methods now averaging over all ranks.

    Covers `compute_gradients` (tf.compat.v1 and Keras optimizers), `_compute_gradients`
    (legacy Keras `minimize`) and `get_gradients` (legacy Keras `fit` in graph mode).
    A name ("sgd") is resolved with `tf.keras.optimizers.get`. With one rank the
    optimizer is returned untouched.
    """
    if isinstance(optimizer, str):
        optimizer = tf.keras.optimizers.get(optimizer)
    if collective_setup() is None:
        return optimizer
    for method in ("compute_gradients", "_compute_gradients"):
        original = getattr(optimizer, method, None)
        if callable(original) and not getattr(original, _WRAPPED, False):
            setattr(optimizer, method, _averaging_pairs(original))
    original = getattr(optimizer, "get_gradients", None)
    if callable(original) and not getattr(original, _WRAPPED, False):
        setattr(optimizer, "get_gradients", _averaging_list(original))
    return optimizer


class NPUBroadcastGlobalVariablesHook(tf.compat.v1.train.SessionRunHook):
    """Copies rank `root_rank`'s global variables to every rank once the session is created (and initialised).

    `index` (upstream: this rank's id) is accepted and not needed. With one rank it does nothing.
    """

    def __init__(self, root_rank: int | None = None, index: int | None = None) -> None:
        self._root_rank = 0 if root_rank is None else root_rank
        self._index = index
        self._bcast_op: Any = None

    def begin(self) -> None:
        if self._bcast_op is None or self._bcast_op.graph is not tf.compat.v1.get_default_graph():
            self._bcast_op = broadcast_global_variables(self._root_rank, self._index)

    def after_create_session(self, session: Any, coord: Any) -> None:
        session.run(self._bcast_op)


def broadcast_global_variables(root_rank: int, index: int | None = None) -> tf.Operation:
    """An op that sets every rank's global variables to `root_rank`'s (one broadcast per dtype)."""
    del index
    setup = collective_setup()
    variables = tf.compat.v1.global_variables()
    if setup is None:
        return tf.no_op(name="broadcast_global_variables")
    if not 0 <= root_rank < setup.rank_size:
        raise ValueError(f"NPUBroadcastGlobalVariablesHook: root_rank={root_rank!r} is not a rank (0..{setup.rank_size - 1})")
    skipped = [v.name for v in variables if not can_carry(v.dtype)]
    if skipped:
        warnings.warn(f"NPUBroadcastGlobalVariablesHook: not broadcast (no collective carries them): {', '.join(skipped)}",
                      RuntimeWarning, stacklevel=2)
    variables = [v for v in variables if can_carry(v.dtype)]
    with tf.name_scope("broadcast_global_variables"):
        if not variables:
            return tf.no_op()
        values = broadcast_packed([v.value() for v in variables], root_rank, setup)
        if setup.rank_id == root_rank:
            return tf.group(*values)
        return tf.group(*[v.assign(value, read_value=False) for v, value in zip(variables, values)])


def overflow_across_ranks(flag: tf.Tensor) -> tf.Tensor:
    """True on every rank when `flag` (this rank's overflow: a scalar bool) is True on any rank; `flag` with one rank.

    `NPULossScaleOptimizer(..., is_distributed=True)` looks this up, so that every
    rank skips the same steps and changes its loss scale the same way.
    """
    setup = collective_setup()
    if setup is None:
        return flag
    with tf.name_scope("overflow_across_ranks"):
        (any_rank,) = reduce_packed([tf.cast(flag, tf.float32)], "Max", "Id", setup)
        return tf.greater(any_rank, 0.0)


# ----------------------------------------------------------------------------- helpers
def _reduced_grads(grads_and_vars: Any, average: bool) -> list:
    """(grad, var) pairs with each grad reduced over the ranks; None grads stay None; one collective per dtype."""
    pairs = list(grads_and_vars)
    setup = collective_setup()
    if setup is None:
        return pairs
    present = [i for i, (g, _) in enumerate(pairs) if g is not None]
    dense = [tf.convert_to_tensor(pairs[i][0]) for i in present]  # IndexedSlices are summed dense
    reduced = reduce_packed(dense, "Add", "Div" if average else "Id", setup) if dense else []
    out = list(pairs)
    for i, value in zip(present, reduced):
        out[i] = (value, pairs[i][1])
    return out


def _averaging_pairs(method: Any) -> Any:
    def averaged(*args: Any, **kwargs: Any) -> list:
        with tf.name_scope("Npu_Distributed_optimizer_Allreduce"):
            return _reduced_grads(method(*args, **kwargs), average=True)

    setattr(averaged, _WRAPPED, True)
    return averaged


def _averaging_list(method: Any) -> Any:
    def averaged(*args: Any, **kwargs: Any) -> list:
        grads = list(method(*args, **kwargs))
        with tf.name_scope("Npu_Distributed_optimizer_get_grads_Allreduce"):
            return [g for g, _ in _reduced_grads([(g, None) for g in grads], average=True)]

    setattr(averaged, _WRAPPED, True)
    return averaged
