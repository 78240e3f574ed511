"""`tf.contrib.data` names TensorFlow 2 dropped; the rest are `tf.compat.v1.data.experimental`'s (same meaning).

In TensorFlow 1.15 `batch_and_drop_remainder` and friends were already thin
wrappers around `Dataset.batch(..., drop_remainder=True)`; they are kept with
that meaning so an input pipeline's shapes stay static as the script expects.
"""
from __future__ import annotations

from typing import Any, Callable

import tensorflow as tf

Transformation = Callable[[tf.data.Dataset], tf.data.Dataset]


def batch_and_drop_remainder(batch_size: Any) -> Transformation:
    """Batches of exactly `batch_size` (the last partial batch is dropped), for `dataset.apply(...)`."""
    return lambda dataset: dataset.batch(batch_size, drop_remainder=True)


def padded_batch_and_drop_remainder(batch_size: Any, padded_shapes: Any, padding_values: Any = None) -> Transformation:
    """`padded_batch` of exactly `batch_size`, for `dataset.apply(...)`."""
    return lambda dataset: dataset.padded_batch(batch_size, padded_shapes, padding_values, drop_remainder=True)


def sloppy_interleave(map_func: Callable[..., tf.data.Dataset], cycle_length: Any, block_length: Any = 1) -> Transformation:
    """`parallel_interleave(..., sloppy=True)`: elements in whatever order the inputs deliver them."""
    return tf.compat.v1.data.experimental.parallel_interleave(map_func, cycle_length, block_length, sloppy=True)
