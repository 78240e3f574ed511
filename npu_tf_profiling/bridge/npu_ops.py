"""npu_ops / npu_unary_ops kernels with a TensorFlow meaning: dropout and gelu (skeleton)."""
from __future__ import annotations


def dropout(x, keep_prob, noise_shape=None, seed=None, name=None):
    raise NotImplementedError("being written on branch bridge-ops")


def gelu(x, name=None):
    raise NotImplementedError("being written on branch bridge-ops")
