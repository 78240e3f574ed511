"""`npu_device.gen_npu_ops`: the NPU kernels with a TensorFlow meaning, as TensorFlow ops; the others raise.

The vendored `npu_ops.py` that 29 ModelZoo TF2 folders carry calls these
generated op wrappers directly: dropout as a mask generator plus a mask
applier (DropOutGenMask/DropOutDoMask, and their V3 forms), FastGelu, and
FusedLayerNorm. Each computes a well-defined function, so here it is built from
TensorFlow ops with upstream's signature, output dtype and shape:

* `drop_out_gen_mask(shape, prob, seed, seed2)`: one bit per element, set with
  probability `prob` (the keep probability), packed 8 to a byte, least
  significant bit first, padded to a multiple of 128 bits: a uint8 vector of
  ceil(n / 128) * 16 bytes, upstream's shape. `drop_out_do_mask(x, mask, keep_prob)`
  is x / keep_prob where the bit is set and 0 elsewhere.
* `drop_out_gen_mask_v3`: one byte (0 or 1) per element, padded to a multiple of
  16, or, when the last two dimensions M, N are multiples of 16, upstream's
  fractal shape [..., N/16, M/16, 16, 16] (element (m, n) at [n//16, m//16, m%16, n%16]);
  `drop_out_do_mask_v3` reads it back in that layout.
* `fast_gelu(x)` = x / (1 + exp(-1.702|x|)) * exp(0.851(x - |x|)) (= x * sigmoid(1.702x)),
  `fast_gelu_grad(dy, x)` its derivative times dy.
* `fused_layer_norm(x, gamma, beta, begin_norm_axis, begin_params_axis, epsilon)`:
  layer normalisation over the axes from begin_norm_axis; returns (y, mean, variance).

The mask's random numbers follow TensorFlow's (seed, seed2) op-seed rules, as
upstream's kernel takes them: (0, 0) is non-deterministic. Gradients come from
TensorFlow's own differentiation of these ops, so nothing is registered under
upstream's op names: the vendored files register their own gradients for
"DropOutDoMask" etc., which must not collide (they are never used here).
"""
from __future__ import annotations

from typing import Any

import tensorflow.compat.v2 as tf

from npu_tf_profiling.bridge.kernels import ADAM_ALTERNATIVE, LARS_ALTERNATIVE
from npu_tf_profiling.bridge.notes import npu_only_kernel

_BITS_ALIGN = 128
_V3_ALIGN = 16
_FAST_GELU_K = 1.702


def _shape_tensor(shape: Any) -> tf.Tensor:
    if isinstance(shape, tf.TensorShape):
        shape = shape.as_list()
    return tf.cast(tf.convert_to_tensor(shape), tf.int64)


def _keep_bits(shape: tf.Tensor, prob: Any, seed: Any, seed2: Any) -> tf.Tensor:
    """A flat bool vector, one entry per element of `shape`, True with probability `prob`."""
    uniform = tf.raw_ops.RandomUniform(shape=tf.reshape(tf.reduce_prod(shape), [1]), dtype=tf.float32,
                                       seed=int(seed or 0), seed2=int(seed2 or 0))
    return uniform < tf.cast(prob, tf.float32)


def _padded(values: tf.Tensor, align: int) -> tf.Tensor:
    count = tf.size(values, out_type=tf.int64)
    return tf.pad(values, [[0, (-count) % align]])


def drop_out_gen_mask(shape: Any, prob: Any, seed: Any = 0, seed2: Any = 0, name: str | None = None) -> tf.Tensor:
    """Upstream's DropOutGenMask: keep bits packed into uint8, ceil(n/128)*16 bytes."""
    with tf.name_scope(name or "DropOutGenMask"):
        bits = _padded(tf.cast(_keep_bits(_shape_tensor(shape), prob, seed, seed2), tf.int32), _BITS_ALIGN)
        weights = tf.bitwise.left_shift(tf.ones([8], tf.int32), tf.range(8, dtype=tf.int32))
        return tf.cast(tf.reduce_sum(tf.reshape(bits, [-1, 8]) * weights, axis=1), tf.uint8)


def drop_out_do_mask(x: Any, mask: Any, keep_prob: Any, name: str | None = None) -> tf.Tensor:
    """Upstream's DropOutDoMask: x / keep_prob where `mask`'s bit for the element is set, else 0."""
    with tf.name_scope(name or "DropOutDoMask"):
        x = tf.convert_to_tensor(x)
        packed = tf.cast(tf.convert_to_tensor(mask), tf.int32)
        bits = tf.bitwise.bitwise_and(tf.bitwise.right_shift(tf.expand_dims(packed, 1), tf.range(8, dtype=tf.int32)), 1)
        keep = tf.reshape(tf.reshape(bits, [-1])[: tf.size(x)], tf.shape(x)) > 0
        return _apply(x, keep, keep_prob)


def drop_out_gen_mask_v3(shape: Any, prob: Any, seed: Any = 0, seed2: Any = 0, name: str | None = None) -> tf.Tensor:
    """Upstream's DropOutGenMaskV3: one uint8 (0/1) per element, flat padded to 16, or fractal [..., N/16, M/16, 16, 16]."""
    with tf.name_scope(name or "DropOutGenMaskV3"):
        shape = _shape_tensor(shape)
        keep = tf.cast(_keep_bits(shape, prob, seed, seed2), tf.uint8)
        static = tf.get_static_value(shape)
        if _fractal(static):
            return _to_fractal(tf.reshape(keep, static), [int(d) for d in static])
        return _padded(keep, _V3_ALIGN)


def drop_out_do_mask_v3(x: Any, mask: Any, keep_prob: Any, name: str | None = None) -> tf.Tensor:
    """Upstream's DropOutDoMaskV3: x / keep_prob where the element's mask byte is 1, else 0."""
    with tf.name_scope(name or "DropOutDoMaskV3"):
        x = tf.convert_to_tensor(x)
        mask = tf.convert_to_tensor(mask)
        if mask.shape.rank is not None and mask.shape.rank >= 4 and _fractal(x.shape.as_list()):
            keep = _from_fractal(mask, x.shape.as_list())
        else:
            keep = tf.reshape(tf.reshape(mask, [-1])[: tf.size(x)], tf.shape(x))
        return _apply(x, keep > 0, keep_prob)


def _fractal(dims: Any) -> bool:
    return (dims is not None and len(dims) >= 2 and all(d is not None and d >= 0 for d in dims)
            and dims[-1] % _V3_ALIGN == 0 and dims[-2] % _V3_ALIGN == 0)


def _to_fractal(keep: tf.Tensor, dims: list[int]) -> tf.Tensor:
    *batch, m, n = dims
    blocks = tf.reshape(keep, [*batch, m // _V3_ALIGN, _V3_ALIGN, n // _V3_ALIGN, _V3_ALIGN])
    lead = list(range(len(batch)))
    b = len(batch)
    return tf.transpose(blocks, [*lead, b + 2, b, b + 1, b + 3])  # [..., N/16, M/16, 16(m), 16(n)]


def _from_fractal(mask: tf.Tensor, dims: list[int]) -> tf.Tensor:
    *batch, m, n = dims
    b = len(batch)
    lead = list(range(b))
    blocks = tf.transpose(mask, [*lead, b + 1, b + 2, b, b + 3])  # [..., M/16, 16(m), N/16, 16(n)]
    return tf.reshape(blocks, dims)


def _apply(x: tf.Tensor, keep: tf.Tensor, keep_prob: Any) -> tf.Tensor:
    """x scaled by 1/keep_prob where kept, as TensorFlow's own dropout computes it (x * scale, then select)."""
    scale = tf.math.reciprocal(tf.cast(keep_prob, x.dtype))
    return tf.where(keep, x * scale, tf.zeros_like(x))


def fast_gelu(features: Any, name: str | None = None) -> tf.Tensor:
    """Upstream's FastGelu: x / (1 + exp(-1.702|x|)) * exp(0.851(x - |x|)); no exp overflows for any x."""
    with tf.name_scope(name or "FastGelu"):
        x = tf.convert_to_tensor(features)
        k = tf.cast(_FAST_GELU_K, x.dtype)
        magnitude = tf.abs(x)
        return x / (1 + tf.exp(-k * magnitude)) * tf.exp(k / 2 * (x - magnitude))


def fast_gelu_grad(gradients: Any, features: Any, name: str | None = None) -> tf.Tensor:
    """Upstream's FastGeluGrad: dy * d/dx[x * sigmoid(1.702x)] = dy * s * (1 + 1.702 x (1 - s)), s = sigmoid(1.702x)."""
    with tf.name_scope(name or "FastGeluGrad"):
        x = tf.convert_to_tensor(features)
        k = tf.cast(_FAST_GELU_K, x.dtype)
        s = tf.sigmoid(k * x)
        return tf.convert_to_tensor(gradients, x.dtype) * s * (1 + k * x * (1 - s))


def fused_layer_norm(x: Any, gamma: Any, beta: Any, begin_norm_axis: int = 0, begin_params_axis: int = 0,
                     epsilon: float = 1e-7, name: str | None = None) -> tuple[tf.Tensor, tf.Tensor, tf.Tensor]:
    """Upstream's FusedLayerNorm: (y, mean, variance), normalised over the axes from `begin_norm_axis`.

    gamma and beta have the shape of x's dimensions from `begin_params_axis`;
    mean and variance keep the normalised axes as size 1 (upstream's output shape).
    """
    with tf.name_scope(name or "FusedLayerNorm"):
        x = tf.convert_to_tensor(x)
        rank = x.shape.rank
        if rank is None:
            raise ValueError("fused_layer_norm: x must have a known rank")
        norm_axis = begin_norm_axis + rank if begin_norm_axis < 0 else begin_norm_axis
        if not 0 <= norm_axis < rank:
            raise ValueError(f"fused_layer_norm: begin_norm_axis={begin_norm_axis} is not an axis of a rank-{rank} x")
        mean, variance = tf.nn.moments(x, axes=list(range(norm_axis, rank)), keepdims=True)
        y = (x - mean) * tf.math.rsqrt(variance + tf.cast(epsilon, x.dtype))
        return y * tf.cast(gamma, x.dtype) + tf.cast(beta, x.dtype), mean, variance


_RNN = "tf.keras.layers.LSTM / GRU (TensorFlow differentiates them; no hand-written gradient kernel is needed)"
_LAMB = "a LAMB optimizer written with tf.norm (e.g. tensorflow_addons.optimizers.LAMB)"

lars_v2 = npu_only_kernel("gen_npu_ops.lars_v2", LARS_ALTERNATIVE)
lamb_apply_optimizer_assign = npu_only_kernel("gen_npu_ops.lamb_apply_optimizer_assign", _LAMB)
lamb_apply_weight_assign = npu_only_kernel("gen_npu_ops.lamb_apply_weight_assign", _LAMB)
adam_apply_one_assign = npu_only_kernel("gen_npu_ops.adam_apply_one_assign", "tf.keras.optimizers.Adam")
adam_apply_one_with_decay_assign = npu_only_kernel(
    "gen_npu_ops.adam_apply_one_with_decay_assign", "tf.keras.optimizers.AdamW (or " + ADAM_ALTERNATIVE + " plus weight decay)")
dynamic_rnn_grad = npu_only_kernel("gen_npu_ops.dynamic_rnn_grad", _RNN)
dynamic_gru_v2_grad = npu_only_kernel("gen_npu_ops.dynamic_gru_v2_grad", _RNN)
basic_lstm_cell = npu_only_kernel("gen_npu_ops.basic_lstm_cell", "tf.keras.layers.LSTMCell")
basic_lstm_cell_c_state_grad = npu_only_kernel("gen_npu_ops.basic_lstm_cell_c_state_grad", _RNN)
basic_lstm_cell_weight_grad = npu_only_kernel("gen_npu_ops.basic_lstm_cell_weight_grad", _RNN)
basic_lstm_cell_input_grad = npu_only_kernel("gen_npu_ops.basic_lstm_cell_input_grad", _RNN)
fused_layer_norm_grad = npu_only_kernel(
    "gen_npu_ops.fused_layer_norm_grad", "tf.GradientTape over gen_npu_ops.fused_layer_norm (it is differentiable here)")
