"""The configuration room: options model, ProfilingConfig, resolution of the three sources.

Nothing here imports TensorFlow, so `reports` and the CLI can use it offline. The
Estimator surface (NPURunConfig...) lives in the `bridge` room, which does.
"""
from npu_tf_profiling.config.errors import (
    EstimatorUnavailableError,
    ProfilingDeprecationWarning,
    ProfilingOptionsError,
)
from npu_tf_profiling.config.options import ProfilingOptions
from npu_tf_profiling.config.profiling_config import ProfilingConfig
from npu_tf_profiling.config.resolution import ENV_MODE, ENV_OPTIONS, Resolution, resolve_profiling
from npu_tf_profiling.config.schedule import CollectionWindow, ScheduleAction

__all__ = [
    "CollectionWindow",
    "ENV_MODE",
    "ENV_OPTIONS",
    "EstimatorUnavailableError",
    "ProfilingConfig",
    "ProfilingDeprecationWarning",
    "ProfilingOptions",
    "ProfilingOptionsError",
    "Resolution",
    "resolve_profiling",
    "ScheduleAction",
]
