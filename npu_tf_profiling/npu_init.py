"""`from npu_tf_profiling.npu_init import *`: the same names as `from npu_bridge.npu_init import *`.

For scripts that import this package instead of running through
`npu-tf-prof run` (which aliases `npu_bridge`). `tf` is TensorFlow's v1 API, as
upstream's star import gives TensorFlow 1.15; a star import placed after
`import tensorflow.compat.v1 as tf` leaves `tf` meaning the same thing.
"""
from npu_tf_profiling.bridge.compat.npu_bridge.npu_init import *  # noqa: F403
from npu_tf_profiling.bridge.compat.npu_bridge.npu_init import __all__  # noqa: F401
