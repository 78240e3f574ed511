"""`npu_bridge.estimator.npu.npu_scope`: Ascend graph-compiler scopes, accepted as no-ops."""
from npu_tf_profiling.bridge.npu_bridge.scopes import (
    NpuExecutePlacement,
    keep_dtype_scope,
    npu_graph_slice_scope,
    npu_mem_type_scope,
    npu_optimizer_scope,
    npu_qos_label_scope,
    npu_recompute_scope,
    npu_stage_scope,
    npu_variable_scope,
    npu_weight_prefetch_scope,
    op_specified_engine_scope,
    subgraph_multi_dims_scope,
    without_npu_compile_scope,
)

__all__ = [
    "NpuExecutePlacement",
    "without_npu_compile_scope",
    "npu_variable_scope",
    "keep_dtype_scope",
    "npu_stage_scope",
    "npu_mem_type_scope",
    "npu_weight_prefetch_scope",
    "op_specified_engine_scope",
    "npu_qos_label_scope",
    "subgraph_multi_dims_scope",
    "npu_optimizer_scope",
    "npu_recompute_scope",
    "npu_graph_slice_scope",
]
