"""`tf.contrib.learn`: only `ModeKeys`, which Estimator scripts compare `mode` with; the rest is `tf.estimator`'s.

contrib.learn's INFER is "infer", the same string as `tf.estimator.ModeKeys.PREDICT`,
so a model_fn that tests `mode == tf.contrib.learn.ModeKeys.INFER` sees the
Estimator's predict mode. Its MNIST reader (`learn.datasets.mnist`) is
bridge/launch/mnist_input_data.py (see areas.MODULE_ALIASES).
"""
from __future__ import annotations


class ModeKeys:
    """TensorFlow 1.15's `tf.contrib.learn.ModeKeys`."""

    TRAIN = "train"
    EVAL = "eval"
    INFER = "infer"


__all__ = ["ModeKeys"]
