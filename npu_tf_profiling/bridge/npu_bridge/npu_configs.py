"""NPU-only configuration records of `npu_config`: DumpConfig, MemoryConfig, ExperimentalConfig...

Scripts build them and hand them to `NPURunConfig(dump_config=..., memory_config=...)`.
They tune the Ascend device (tensor dumps, overflow detection, memory policy),
so they are accepted with upstream's arguments and defaults, keep their values,
and are noted once; `NPURunConfig` accepts the corresponding arguments.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from npu_tf_profiling.bridge.notes import note_once


@dataclass
class DumpConfig:
    enable_dump: bool = False
    dump_path: str | None = None
    dump_step: str | None = None
    dump_mode: str = "output"
    enable_dump_debug: bool = False
    dump_debug_mode: str = "all"
    dump_data: str = "tensor"
    dump_layer: str | None = None

    def __post_init__(self) -> None:
        note_once("DumpConfig", "NPU tensor dump / overflow detection is not written on CPU/GPU "
                  "(tf.debugging.enable_check_numerics finds inf/nan)")


@dataclass
class MemoryConfig:
    atomic_clean_policy: int = 0
    static_memory_policy: int = 0
    memory_optimization_policy: str | None = None

    def __post_init__(self) -> None:
        note_once("MemoryConfig", "NPU memory policies have no CPU/GPU meaning")


@dataclass
class GraphMemoryOptimizeConfig:
    recompute: str | None = None
    graph_slice: str | None = None

    def __post_init__(self) -> None:
        for key in ("recompute", "graph_slice"):
            if getattr(self, key) not in (None, "auto", "manual"):
                raise ValueError(f"GraphMemoryOptimizeConfig: {key} should be in ['auto', 'manual'], got {getattr(self, key)!r}")


@dataclass
class ExperimentalConfig:
    logical_device_cluster_deploy_mode: str = "LB"
    logical_device_id: Any = None
    model_deploy_mode: Any = None
    model_deploy_devicelist: Any = None
    graph_memory_optimize_config: GraphMemoryOptimizeConfig | None = None
    enable_graph_parallel: Any = None
    graph_parallel_option_path: Any = None
    graph_compiler_cache_dir: Any = None
    resource_config_path: Any = None
    accelerate_train_mode: Any = None

    def __post_init__(self) -> None:
        note_once("ExperimentalConfig", "NPU deployment/graph options have no CPU/GPU meaning")


@dataclass
class DynamicInputConfig:
    input_shape: str
    dynamic_dims: str
    dynamic_node_type: int

    def __post_init__(self) -> None:
        note_once("DynamicInputConfig", "TensorFlow on CPU/GPU takes dynamic shapes as they come; nothing to declare")
