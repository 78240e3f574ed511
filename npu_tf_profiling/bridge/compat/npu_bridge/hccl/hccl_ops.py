"""`npu_bridge.hccl.hccl_ops`: collectives across ranks; remote (RDMA) memory ops raise when called."""
from npu_tf_profiling.bridge.ranks.graph_collectives import allgather, allreduce, broadcast, reduce_scatter
from npu_tf_profiling.bridge.kernels import remote_read, remote_ref_read, remote_scatter_write, remote_write

__all__ = [
    "allreduce",
    "broadcast",
    "allgather",
    "reduce_scatter",
    "remote_read",
    "remote_ref_read",
    "remote_write",
    "remote_scatter_write",
]
