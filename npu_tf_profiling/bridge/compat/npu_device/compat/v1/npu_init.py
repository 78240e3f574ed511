"""`from npu_device.compat.v1.npu_init import *`: the same names as `from npu_bridge.npu_init import *`."""
from npu_tf_profiling.bridge.compat.npu_bridge.npu_init import *  # noqa: F403
from npu_tf_profiling.bridge.compat.npu_bridge.npu_init import __all__  # noqa: F401
