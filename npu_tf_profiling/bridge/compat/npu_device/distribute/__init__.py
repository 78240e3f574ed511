"""`npu_device.distribute`: identity with one rank; sharding with several (collectives: not built for eager multi-rank)."""
from npu_tf_profiling.bridge.npu_device.distribute import (
    all_reduce,
    broadcast,
    npu_distributed_keras_optimizer_wrapper,
    shard_and_rebatch_dataset,
)

__all__ = ["all_reduce", "broadcast", "npu_distributed_keras_optimizer_wrapper", "shard_and_rebatch_dataset"]
