"""`npu_device.distribute`: broadcast, all_reduce, the Keras optimizer wrapper and dataset sharding.

Upstream these act only in an NPU cluster worker (`RANK_SIZE` > 1 and an opened,
default device); otherwise they are the identity, and that is what they are here
for one rank: `broadcast` changes nothing, `all_reduce` returns its values,
the wrapper returns the optimizer (its `apply_gradients` then reduces over one
rank, i.e. not at all), and `shard_and_rebatch_dataset` returns
`(dataset, global_bs)`, as upstream does for one worker (with several ranks it
shards the dataset and divides the batch size, as upstream: no collective is needed).

With `RANK_SIZE` > 1 the collectives would have to cross processes from eager
TensorFlow 2 code. The TF1 work (bridge/hccl_ops.py, bridge/rank_session.py)
joins the ranks through Sessions; the eager equivalent (a collective-enabled
eager context) is not built yet, so a multi-rank collective call raises
`MultiRankNotBuiltError` instead of silently training each rank alone.
Argument checks (reduction names, the batch size split) are upstream's in both cases.
"""
from __future__ import annotations

from typing import Any

from npu_tf_profiling.bridge.device_handle import global_npu_ctx
from npu_tf_profiling.bridge.hccl_ops import REDUCTIONS
from npu_tf_profiling.bridge.ranks import WORLD_GROUP, check_group

_REDUCTIONS = ("mean", *REDUCTIONS)


class MultiRankNotBuiltError(NotImplementedError):
    """A `npu_device.distribute` collective was called with RANK_SIZE > 1 (eager multi-rank is not built)."""


def _cluster_worker(what: str) -> bool:
    ctx = global_npu_ctx()
    if ctx is None or not ctx.is_cluster_worker():
        return False
    raise MultiRankNotBuiltError(
        f"npu_device.distribute.{what} with RANK_SIZE={ctx.workers_num}: collectives across processes from eager "
        "TensorFlow 2 code are not built yet on CPU/GPU; run one rank, or use tf.distribute.MultiWorkerMirroredStrategy"
    )


def all_reduce(values: Any, reduction: str = "mean", fusion: int = 1, fusion_id: int = -1, group: str = WORLD_GROUP) -> Any:
    """Upstream's all_reduce: the values reduced over the ranks (mean by default); one rank: the values themselves."""
    if reduction not in _REDUCTIONS:
        raise ValueError(f"all_reduce: reduction={reduction!r}: expected one of {', '.join(_REDUCTIONS)}")
    check_group(group)
    _cluster_worker("all_reduce")
    return values


def broadcast(values: Any, root_rank: int = 0, fusion: int = 2, fusion_id: int = 0, group: str = WORLD_GROUP) -> None:
    """Upstream's broadcast: assigns rank `root_rank`'s values to the variables on every rank; one rank: nothing to do."""
    check_group(group)
    _cluster_worker("broadcast")


def npu_distributed_keras_optimizer_wrapper(optimizer: Any, reduce_reduction: str = "mean", fusion: int = 1,
                                            fusion_id: int = -1, group: str = WORLD_GROUP) -> Any:
    """Upstream's wrapper: the optimizer (names resolved by tf.keras.optimizers.get), gradients all-reduced when applied."""
    import tensorflow as tf

    if reduce_reduction not in _REDUCTIONS:
        raise ValueError(f"npu_distributed_keras_optimizer_wrapper: reduce_reduction={reduce_reduction!r}: "
                         f"expected one of {', '.join(_REDUCTIONS)}")
    check_group(group)
    optimizer = tf.keras.optimizers.get(optimizer)
    _cluster_worker("npu_distributed_keras_optimizer_wrapper")
    return optimizer


def shard_and_rebatch_dataset(dataset: Any, global_bs: int) -> tuple[Any, int]:
    """Upstream's sharding: (this rank's shard, per-rank batch size); one rank: (dataset, global_bs)."""
    ctx = global_npu_ctx()
    if ctx is None or ctx.workers_num <= 1:
        return dataset, global_bs
    if global_bs % ctx.workers_num != 0:
        raise ValueError(f"Batch size must be divisible by num npus: {ctx.workers_num}")
    return dataset.shard(ctx.workers_num, ctx.worker_id), global_bs // ctx.workers_num
