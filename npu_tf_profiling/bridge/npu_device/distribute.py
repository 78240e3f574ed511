"""`npu_device.distribute`: broadcast, all_reduce, the Keras optimizer wrapper and dataset sharding.

Upstream these act only in an NPU cluster worker (`RANK_SIZE` > 1 and an opened,
default device); otherwise they are the identity, and that is what they are here
for one rank: `broadcast` changes nothing, `all_reduce` returns its values,
the wrapper returns the optimizer (its `apply_gradients` then reduces over one
rank, i.e. not at all), and `shard_and_rebatch_dataset` returns
`(dataset, global_bs)`, as upstream does for one worker (with several ranks it
shards the dataset and divides the batch size, as upstream: no collective is needed).

With `RANK_SIZE` > 1, `npu_device.open()` has joined the ranks (`ranks.eager_collectives`):
`all_reduce` and `broadcast` are TensorFlow's collective ops across the ranks'
processes, and the wrapped optimizer all-reduces the gradients it applies.
Argument checks (reduction names, the batch size split) are upstream's in both cases.
"""
from __future__ import annotations

from typing import Any

from npu_tf_profiling.bridge.ranks.eager_collectives import EagerRanks, joined
from npu_tf_profiling.bridge.npu_device.handle import global_npu_ctx
from npu_tf_profiling.bridge.ranks.graph_collectives import REDUCTIONS
from npu_tf_profiling.bridge.ranks.discovery import WORLD_GROUP, check_group

_REDUCTIONS = ("mean", *REDUCTIONS)


class NotJoinedError(RuntimeError):
    """A collective was called with RANK_SIZE > 1 before `npu_device.open()` joined the ranks."""


def _ranks(what: str) -> EagerRanks | None:
    """The joined ranks when this process is a cluster worker (RANK_SIZE > 1), else None: the identity."""
    ctx = global_npu_ctx()
    if ctx is None or not ctx.is_cluster_worker():
        return None
    ranks = joined()
    if ranks is None:
        raise NotJoinedError(f"npu_device.distribute.{what} with RANK_SIZE={ctx.workers_num}: this handle did not "
                             "join the ranks; get it from npu_device.open(), which joins them (TF_CONFIG or RANK_TABLE_FILE)")
    return ranks


def all_reduce(values: Any, reduction: str = "mean", fusion: int = 1, fusion_id: int = -1, group: str = WORLD_GROUP) -> Any:
    """Upstream's all_reduce: the values reduced over the ranks (mean by default), None entries kept as None;
    one rank: the values themselves."""
    if reduction not in _REDUCTIONS:
        raise ValueError(f"all_reduce: reduction={reduction!r}: expected one of {', '.join(_REDUCTIONS)}")
    check_group(group)
    ranks = _ranks("all_reduce")
    if ranks is None:
        return values
    many = isinstance(values, (list, tuple))
    reduced = [None if value is None else ranks.all_reduce(value, reduction) for value in (values if many else [values])]
    return reduced if many else reduced[0]


def broadcast(values: Any, root_rank: int = 0, fusion: int = 2, fusion_id: int = 0, group: str = WORLD_GROUP) -> None:
    """Upstream's broadcast: assigns rank `root_rank`'s values to the variables on every rank; one rank: nothing to do."""
    check_group(group)
    ranks = _ranks("broadcast")
    if ranks is None:
        return
    if not 0 <= root_rank < ranks.size:
        raise ValueError(f"broadcast: root_rank={root_rank}: expected a rank from 0 to {ranks.size - 1}")
    for variable in values if isinstance(values, (list, tuple)) else [values]:
        ranks.broadcast(variable, root_rank)


def npu_distributed_keras_optimizer_wrapper(optimizer: Any, reduce_reduction: str = "mean", fusion: int = 1,
                                            fusion_id: int = -1, group: str = WORLD_GROUP) -> Any:
    """Upstream's wrapper: the optimizer (names resolved by tf.keras.optimizers.get), gradients all-reduced when applied."""
    import tensorflow as tf

    if reduce_reduction not in _REDUCTIONS:
        raise ValueError(f"npu_distributed_keras_optimizer_wrapper: reduce_reduction={reduce_reduction!r}: "
                         f"expected one of {', '.join(_REDUCTIONS)}")
    check_group(group)
    optimizer = tf.keras.optimizers.get(optimizer)
    if _ranks("npu_distributed_keras_optimizer_wrapper") is None:
        return optimizer
    apply_gradients = optimizer.apply_gradients

    def apply_reduced_gradients(grads_and_vars: Any, *args: Any, **kwargs: Any) -> Any:
        grads, variables = zip(*grads_and_vars)
        return apply_gradients(zip(all_reduce(list(grads), reduce_reduction, fusion, fusion_id, group), variables), *args, **kwargs)

    optimizer.apply_gradients = apply_reduced_gradients
    return optimizer


def shard_and_rebatch_dataset(dataset: Any, global_bs: int) -> tuple[Any, int]:
    """Upstream's sharding: (this rank's shard, per-rank batch size); one rank: (dataset, global_bs)."""
    ctx = global_npu_ctx()
    if ctx is None or ctx.workers_num <= 1:
        return dataset, global_bs
    if global_bs % ctx.workers_num != 0:
        raise ValueError(f"Batch size must be divisible by num npus: {ctx.workers_num}")
    return dataset.shard(ctx.workers_num, ctx.worker_id), global_bs // ctx.workers_num
