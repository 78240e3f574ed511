"""Reading and writing the `NpuOptimizer` custom-optimizer entry of a session ConfigProto.

Upstream npu_bridge carries the profiling request inside the session config as a
Grappler custom optimizer; we keep exactly that wire format so existing scripts
(and NPURunConfig-produced configs) work unchanged. Works on any object with the
ConfigProto shape, so this module needs no TensorFlow import of its own.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

NPU_OPTIMIZER = "NpuOptimizer"


@dataclass(frozen=True)
class SessionProfilingRequest:
    """What one session ConfigProto asks for; `present` is False when it has no NpuOptimizer entry."""

    present: bool
    profiling_mode: bool = False
    profiling_options: str = ""


def _npu_entry(config: Any) -> Any | None:
    if config is None:
        return None
    for custom in config.graph_options.rewrite_options.custom_optimizers:
        if custom.name == NPU_OPTIMIZER:
            return custom
    return None


def read_request(config: Any) -> SessionProfilingRequest:
    entry = _npu_entry(config)
    if entry is None:
        return SessionProfilingRequest(present=False)
    params = entry.parameter_map
    mode = bool(params["profiling_mode"].b) if "profiling_mode" in params else False
    options = params["profiling_options"].s if "profiling_options" in params else b""
    text = options.decode("utf-8", errors="replace") if isinstance(options, bytes) else str(options)
    return SessionProfilingRequest(present=True, profiling_mode=mode, profiling_options=text)


def write_request(config: Any, profiling_mode: bool, profiling_options: str) -> None:
    """Add (or update) the NpuOptimizer entry, as upstream NPUEstimator does."""
    entry = _npu_entry(config)
    if entry is None:
        entry = config.graph_options.rewrite_options.custom_optimizers.add()
        entry.name = NPU_OPTIMIZER
    entry.parameter_map["use_off_line"].b = True
    entry.parameter_map["profiling_mode"].b = profiling_mode
    entry.parameter_map["profiling_options"].s = profiling_options.encode("utf-8")
