"""`npu_bridge.estimator.npu.npu_optimizer`: distributed optimizers and all-reduce."""
from npu_tf_profiling.bridge.ranks.data_parallel import NPUDistributedOptimizer, allreduce, npu_distributed_optimizer_wrapper
from npu_tf_profiling.bridge.npu_bridge.optimizers import KerasDistributeOptimizer, NPUOptimizer

__all__ = [
    "NPUDistributedOptimizer",
    "NPUOptimizer",
    "KerasDistributeOptimizer",
    "npu_distributed_optimizer_wrapper",
    "allreduce",
]
