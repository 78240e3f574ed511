"""`npu_bridge.npu_cpu.npu_cpu_ops`: Ascend AI-CPU kernels with no TensorFlow counterpart (raise when called)."""
from npu_tf_profiling.bridge.kernels import embedding_local_index, embeddingrankid

__all__ = ["embeddingrankid", "embedding_local_index"]
