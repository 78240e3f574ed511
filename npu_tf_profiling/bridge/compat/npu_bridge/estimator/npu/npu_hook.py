"""`npu_bridge.estimator.npu.npu_hook`: the variable-broadcast hook."""
from npu_tf_profiling.bridge.distributed import NPUBroadcastGlobalVariablesHook

__all__ = ["NPUBroadcastGlobalVariablesHook"]
