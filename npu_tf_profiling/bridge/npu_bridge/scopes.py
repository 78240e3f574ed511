"""`npu_scope`: graph scopes that steer the Ascend graph compiler, accepted as no-ops.

Upstream each scope stamps an attribute on the ops built inside it (compile on
the host, keep fp32, pipeline stage, weight prefetch...). TensorFlow's CPU/GPU
runtime has no such compiler, so the ops are built exactly as without the
scope; the first use of each scope is noted once.
"""
from __future__ import annotations

import contextlib
from enum import Enum
from typing import Any

from npu_tf_profiling.bridge.notes import note_once


class NpuExecutePlacement(Enum):
    """Where the NPU runs an op (upstream's values); `npu_variable_scope` accepts it and places nothing."""

    ALL = "all"
    CUBE = "cube"
    VECTOR = "vector"
    TAISHAN = "taishan"
    DVPP = "dvpp"
    HOST = "host"


def _accepted_scope(name: str) -> contextlib.AbstractContextManager:
    note_once(f"npu_scope.{name}", "an Ascend graph-compiler hint; ops inside are built unchanged on CPU/GPU")
    return contextlib.nullcontext()


def without_npu_compile_scope() -> Any:
    return _accepted_scope("without_npu_compile_scope")


def npu_variable_scope(placement: NpuExecutePlacement = NpuExecutePlacement.ALL) -> Any:
    return _accepted_scope("npu_variable_scope")


def keep_dtype_scope() -> Any:
    return _accepted_scope("keep_dtype_scope")


def npu_stage_scope(stage: int) -> Any:
    return _accepted_scope("npu_stage_scope")


def npu_mem_type_scope() -> Any:
    return _accepted_scope("npu_mem_type_scope")


def npu_weight_prefetch_scope(buffer_pool_id: int = 0, buffer_pool_size: int = 536870912) -> Any:
    return _accepted_scope("npu_weight_prefetch_scope")


def op_specified_engine_scope(engine_name: str, kernel_lib_name: str) -> Any:
    return _accepted_scope("op_specified_engine_scope")


def npu_qos_label_scope(label: int) -> Any:
    return _accepted_scope("npu_qos_label_scope")


def subgraph_multi_dims_scope(index: int) -> Any:
    return _accepted_scope("subgraph_multi_dims_scope")


def npu_optimizer_scope() -> Any:
    return _accepted_scope("npu_optimizer_scope")


def npu_recompute_scope() -> Any:
    return _accepted_scope("npu_recompute_scope")


def npu_graph_slice_scope(slice_num: int | None = None) -> Any:
    return _accepted_scope("npu_graph_slice_scope")
