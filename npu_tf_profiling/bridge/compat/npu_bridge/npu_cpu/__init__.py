"""`npu_bridge.npu_cpu`: Ascend AI-CPU kernels (npu_cpu_ops)."""
