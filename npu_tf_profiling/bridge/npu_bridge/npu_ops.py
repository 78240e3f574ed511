"""The npu_ops / npu_unary_ops kernels that have an exact TensorFlow meaning: `dropout` and `gelu`.

Ascend scripts call `npu_ops.dropout(x, keep_prob)` instead of `tf.nn.dropout` because
on the NPU it runs as the fused DropOutGenMask/DropOutDoMask pair, and
`npu_unary_ops.gelu(x)` because Gelu is one NPU kernel there. Both compute
well-defined functions, so here they are the TensorFlow ops that compute the same
thing: scripts keep their numerics, only the kernels differ.

TensorFlow is imported as its explicit v1/v2 modules (never plain ``tensorflow``),
so these functions mean the same whether or not a launcher gave the script the v1
API under the name ``tensorflow``.
"""
from __future__ import annotations

import numbers

import tensorflow.compat.v1 as tf1
import tensorflow.compat.v2 as tf2


def dropout(x, keep_prob, noise_shape=None, seed=None, name=None):
    """Keeps each element with probability `keep_prob`, scaling kept ones by 1/keep_prob.

    Upstream's keep_prob contract, checked the way upstream checks it: `x` must be
    floating point, a Python-number `keep_prob` must lie in (0, 1], and a Python float
    1.0 returns `x` itself (no op is added, as upstream). The mask follows TensorFlow's
    op-seed rules (`tf.random.set_seed` / `seed`), as upstream's mask op does, so a
    fixed graph seed gives a reproducible mask.

    Departure: upstream raises RuntimeError in eager mode because its NPU kernel is
    graph-only; here the TensorFlow op also runs eagerly, so no error is raised.
    """
    x = tf1.convert_to_tensor(x, name="x")
    if not x.dtype.is_floating:
        raise ValueError(f"npu_ops.dropout: x must be a floating point tensor, got a {x.dtype.name} tensor")
    if isinstance(keep_prob, numbers.Real) and not 0 < keep_prob <= 1.0:
        raise ValueError(f"npu_ops.dropout: keep_prob must be a float in (0, 1] or a scalar tensor, got {keep_prob!r}")
    if isinstance(keep_prob, float) and keep_prob == 1.0:
        return x
    # TensorFlow's dropout takes the drop rate; it scales kept elements by 1/(1 - rate) = 1/keep_prob.
    return tf2.nn.dropout(x, rate=1 - keep_prob, noise_shape=noise_shape, seed=seed, name=name)


def gelu(x, name=None):
    """GELU with upstream's tanh approximation: 0.5*x*(1 + tanh(sqrt(2/pi)*(x + 0.044715*x^3))).

    The NPU Gelu kernel computes the tanh form, not the exact erf form, so this uses
    TensorFlow's `gelu(approximate=True)`, which is that formula.
    """
    return tf2.nn.gelu(x, approximate=True, name=name)
