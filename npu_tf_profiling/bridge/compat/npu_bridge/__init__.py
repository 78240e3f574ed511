"""`npu_bridge` served by npu_tf_profiling on CPU/GPU TensorFlow (see docs/npu_bridge_surface.md)."""
