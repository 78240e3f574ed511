"""`npu_bridge.hccl`: collective communication (hccl_ops)."""
