"""`npu_bridge.tf_adapter`: upstream's native extension. Only its data-type constants exist here.

Scripts pass `tf_adapter.DT_FLOAT` and friends to the RDMA helpers of
`npu_plugin`, which raise when called on CPU/GPU; any other attribute names the
native library, which does not exist here. The constants are TensorFlow dtypes.
"""
from __future__ import annotations

from typing import Any

import tensorflow as tf

DT_FLOAT = tf.float32
DT_FLOAT16 = tf.float16
DT_DOUBLE = tf.float64
DT_INT8 = tf.int8
DT_INT16 = tf.int16
DT_INT32 = tf.int32
DT_INT64 = tf.int64
DT_UINT8 = tf.uint8
DT_BOOL = tf.bool


def __getattr__(name: str) -> Any:
    raise AttributeError(f"npu_bridge.tf_adapter.{name} is part of Ascend's native adapter library, which does not exist on CPU/GPU")
