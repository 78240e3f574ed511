"""`npu_bridge.estimator.npu.npu_estimator`: NPUEstimator and NPUEstimatorSpec."""
from npu_tf_profiling.bridge.npu_bridge.estimator import NPUEstimator, NPUEstimatorSpec

__all__ = ["NPUEstimator", "NPUEstimatorSpec"]
