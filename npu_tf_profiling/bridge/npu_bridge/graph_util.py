"""The rest of `npu_bridge.estimator.npu.util` that scripts call (set_iteration_per_loop: `iteration_loop`)."""
from __future__ import annotations

from typing import Any, Sequence

import tensorflow as tf

from npu_tf_profiling.bridge.notes import note_once

_EXECUTE_MODES = ("lazy_recompile", "dynamic_execute")


def variable_initializer_in_host(var_list: Sequence[tf.Variable]) -> tf.Operation:
    """An op initialising `var_list` (as upstream: `tf.variables_initializer`, named var_in_host)."""
    return tf.compat.v1.variables_initializer(var_list, name="var_in_host")


def set_graph_exec_config(fetch: Any, dynamic_input: bool = False, dynamic_graph_execute_mode: str = "dynamic_execute",
                          dynamic_inputs_shape_range: str | None = None, is_train_graph: bool = False,
                          experimental_config: Any = None) -> Any:
    """Upstream marks the fetch's graph for the NPU compiler's dynamic-shape modes; `fetch` is returned unchanged."""
    if dynamic_graph_execute_mode not in _EXECUTE_MODES:
        raise ValueError(f"dynamic_graph_execute_mode should be lazy_recompile or dynamic_execute, got {dynamic_graph_execute_mode!r}")
    note_once("util.set_graph_exec_config", "NPU graph-compile modes have no CPU/GPU meaning; the fetch is returned unchanged")
    return fetch
