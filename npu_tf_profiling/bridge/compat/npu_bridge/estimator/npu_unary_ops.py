"""`npu_bridge.estimator.npu_unary_ops`: upstream exposes its generated ops as the object `npu_unary_ops`."""
from types import SimpleNamespace

from npu_tf_profiling.bridge.npu_bridge.npu_ops import gelu

npu_unary_ops = SimpleNamespace(gelu=gelu)

__all__ = ["npu_unary_ops"]
