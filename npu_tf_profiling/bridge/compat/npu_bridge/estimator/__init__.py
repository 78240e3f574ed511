"""`npu_bridge.estimator`: its sub-modules npu_ops, npu_unary_ops and npu/ are what scripts import."""
