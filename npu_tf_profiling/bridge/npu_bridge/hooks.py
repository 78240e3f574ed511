"""Session hooks of `npu_bridge.npu_init`: `npu_hooks_append` and `NpuEmptyHook`."""
from __future__ import annotations

from typing import Any

import tensorflow as tf

from npu_tf_profiling.bridge.ranks.data_parallel import NPUBroadcastGlobalVariablesHook
from npu_tf_profiling.bridge.ranks.discovery import get_rank_id, get_rank_size


def npu_hooks_append(hooks_list: Any = ()) -> list:
    """Upstream's helper: `hooks_list` (a list, extended in place) plus the variable-broadcast hook.

    The hook copies rank 0's initial variables to every rank. With one process
    there is nothing to copy, so it is only appended when the rank size is > 1,
    and never twice (NPUEstimator.train appends it too, as upstream's does).
    """
    hooks = hooks_list if isinstance(hooks_list, list) else []
    if get_rank_size() > 1 and not any(isinstance(h, NPUBroadcastGlobalVariablesHook) for h in hooks):
        hooks.append(NPUBroadcastGlobalVariablesHook(0, get_rank_id()))
    return hooks


class NpuEmptyHook(tf.compat.v1.train.SessionRunHook):
    """A SessionRunHook that does nothing (upstream's placeholder where a hook list must not be empty)."""
