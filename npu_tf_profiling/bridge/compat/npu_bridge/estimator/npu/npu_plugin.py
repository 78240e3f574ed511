"""`npu_bridge.estimator.npu.npu_plugin`: device start/stop (no-ops; profiling honoured) and RDMA pools (raise)."""
from npu_tf_profiling.bridge.kernels import (
    get_rdma_cache,
    get_var_addr_and_size,
    init_rdma_pool,
    malloc_shared_memory,
    rdma_remote_init,
    rdma_remote_register,
)
from npu_tf_profiling.bridge.npu_bridge.system import npu_close, npu_resource_init, npu_resource_shutdown, set_device_sat_mode

__all__ = [
    "npu_resource_init",
    "npu_resource_shutdown",
    "npu_close",
    "set_device_sat_mode",
    "init_rdma_pool",
    "rdma_remote_register",
    "rdma_remote_init",
    "get_var_addr_and_size",
    "malloc_shared_memory",
    "get_rdma_cache",
]
