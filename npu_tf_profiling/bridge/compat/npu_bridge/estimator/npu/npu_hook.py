"""`npu_bridge.estimator.npu.npu_hook`: the variable-broadcast hook."""
from npu_tf_profiling.bridge.ranks.data_parallel import NPUBroadcastGlobalVariablesHook

__all__ = ["NPUBroadcastGlobalVariablesHook"]
