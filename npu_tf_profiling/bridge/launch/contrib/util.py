"""`tf.contrib.util`: the tensor-util helpers TensorFlow 2 keeps under other names."""
from __future__ import annotations

import tensorflow as tf

constant_value = tf.get_static_value  # TensorFlow 1.15: tensor_util.constant_value(tensor, partial=False)
make_tensor_proto = tf.make_tensor_proto
make_ndarray = tf.make_ndarray

__all__ = ["constant_value", "make_tensor_proto", "make_ndarray"]
