"""`npu_bridge.estimator.npu.npu_config`: NPURunConfig, ProfilingConfig and the NPU-only config records."""
from npu_tf_profiling.bridge.npu_bridge.estimator import NPURunConfig
from npu_tf_profiling.bridge.npu_bridge.npu_configs import (
    DumpConfig,
    DynamicInputConfig,
    ExperimentalConfig,
    GraphMemoryOptimizeConfig,
    MemoryConfig,
)
from npu_tf_profiling.bridge.npu_bridge.scopes import NpuExecutePlacement
from npu_tf_profiling.config import ProfilingConfig

__all__ = [
    "NPURunConfig",
    "ProfilingConfig",
    "DumpConfig",
    "MemoryConfig",
    "ExperimentalConfig",
    "GraphMemoryOptimizeConfig",
    "DynamicInputConfig",
    "NpuExecutePlacement",
]
