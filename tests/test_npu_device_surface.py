"""The npu_device stand-ins against upstream's formulas (numbers computed here with NumPy), and the options' checks.

Dropout: upstream's DropOutGenMask packs one keep bit per element (least significant bit first, 128-bit
aligned) and DropOutDoMask computes x * bit / keep_prob; the V3 pair keeps one byte per element, in the
fractal layout [..., N/16, M/16, 16, 16] when M and N are multiples of 16. FastGelu is
x / (1 + exp(-1.702|x|)) * exp(0.851(x - |x|)); `npu_device.ops.gelu` is the tanh GELU.
"""
from __future__ import annotations

import math

import numpy as np
import pytest
import tensorflow as tf

from npu_tf_profiling.bridge.npu_device import gen_ops as gen_npu_ops
from npu_tf_profiling.bridge.compat.npu_device import ops as npu_ops
from npu_tf_profiling.bridge.npu_device.distribute import all_reduce, shard_and_rebatch_dataset
from npu_tf_profiling.bridge.npu_device.options import NpuConfig, NpuOptionError
from npu_tf_profiling.bridge.notes import NpuOnlyOpError


def _x(*shape: int) -> np.ndarray:
    return np.random.default_rng(1).normal(size=shape).astype(np.float32)


def test_drop_out_gen_mask_packs_one_bit_per_element_and_do_mask_scales_kept_ones() -> None:
    x = _x(3, 50)  # 150 elements -> two 128-bit blocks -> 32 bytes
    mask = gen_npu_ops.drop_out_gen_mask(tf.shape(x), 0.7, seed=5, seed2=9)
    assert mask.dtype == tf.uint8 and mask.shape == (32,)
    bits = np.unpackbits(mask.numpy(), bitorder="little")
    assert not bits[150:].any()  # padding is never kept
    expected = x * bits[:150].reshape(3, 50) / np.float32(0.7)
    np.testing.assert_allclose(gen_npu_ops.drop_out_do_mask(x, mask, 0.7).numpy(), expected, rtol=1e-6)
    # Fixed seeds give the same mask in every new graph, as upstream's graph op (eager ops share one stream).
    twice = [tf.function(lambda: gen_npu_ops.drop_out_gen_mask([3, 50], 0.7, seed=5, seed2=9))() for _ in range(2)]
    np.testing.assert_array_equal(twice[0].numpy(), twice[1].numpy())


def test_the_keep_probability_is_the_share_of_kept_elements() -> None:
    mask = gen_npu_ops.drop_out_gen_mask([200, 500], 0.3, seed=1, seed2=2)
    kept = np.unpackbits(mask.numpy(), bitorder="little")[:100_000].mean()
    assert abs(kept - 0.3) < 0.01


def test_do_mask_gradient_is_the_mask_over_keep_prob() -> None:
    x = tf.constant(_x(4, 40))
    mask = gen_npu_ops.drop_out_gen_mask(tf.shape(x), 0.5, seed=3, seed2=4)
    with tf.GradientTape() as tape:
        tape.watch(x)
        y = gen_npu_ops.drop_out_do_mask(x, mask, 0.5)
    bits = np.unpackbits(mask.numpy(), bitorder="little")[:160].reshape(4, 40)
    np.testing.assert_allclose(tape.gradient(y, x).numpy(), bits / 0.5)


def test_v3_flat_mask_is_one_byte_per_element_aligned_to_16() -> None:
    x = _x(5, 7)
    mask = gen_npu_ops.drop_out_gen_mask_v3(tf.shape(x), 0.6, seed=2, seed2=3)
    assert mask.dtype == tf.uint8 and mask.shape == (48,) and set(np.unique(mask.numpy())) <= {0, 1}
    keep = mask.numpy()[:35].reshape(5, 7)
    np.testing.assert_allclose(gen_npu_ops.drop_out_do_mask_v3(x, mask, 0.6).numpy(), x * keep / np.float32(0.6), rtol=1e-6)


def test_v3_fractal_mask_has_upstreams_shape_and_layout() -> None:
    x = _x(2, 32, 48)  # M = 32, N = 48 -> [2, 3, 2, 16, 16]
    mask = gen_npu_ops.drop_out_gen_mask_v3(tf.shape(x), 0.5, seed=4, seed2=6)
    assert mask.shape == (2, 3, 2, 16, 16)
    fractal = mask.numpy()
    keep = np.empty((2, 32, 48), np.uint8)
    for m in range(32):
        for n in range(48):
            keep[:, m, n] = fractal[:, n // 16, m // 16, m % 16, n % 16]
    np.testing.assert_allclose(gen_npu_ops.drop_out_do_mask_v3(x, mask, 0.5).numpy(), x * keep / np.float32(0.5), rtol=1e-6)


def test_fast_gelu_and_its_grad_follow_upstreams_formula() -> None:
    x = np.linspace(-12, 12, 241).astype(np.float64)
    expected = x / (1 + np.exp(-1.702 * np.abs(x))) * np.exp(0.851 * (x - np.abs(x)))
    np.testing.assert_allclose(gen_npu_ops.fast_gelu(tf.constant(x)).numpy(), expected, rtol=1e-6, atol=1e-12)  # TensorFlow's float64 exp is not libm's
    h = 1e-6
    numeric = (x + h) / (1 + np.exp(-1.702 * (x + h))) - (x - h) / (1 + np.exp(-1.702 * (x - h)))
    dy = np.full_like(x, 3.0)
    np.testing.assert_allclose(gen_npu_ops.fast_gelu_grad(tf.constant(dy), tf.constant(x)).numpy(), 3.0 * numeric / (2 * h),
                               rtol=1e-6, atol=1e-9)
    assert np.isfinite(gen_npu_ops.fast_gelu(tf.constant([-1e4, 1e4], tf.float32)).numpy()).all()


def test_npu_device_ops_gelu_is_the_tanh_form() -> None:
    x = np.linspace(-6, 6, 121)
    expected = 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
    np.testing.assert_allclose(npu_ops.gelu(tf.constant(x)).numpy(), expected, rtol=1e-6, atol=1e-9)  # erf form: 5e-4 away


def test_fused_layer_norm_normalises_from_begin_norm_axis() -> None:
    x = _x(4, 6, 10).astype(np.float64)
    gamma, beta = _x(6, 10).astype(np.float64), _x(6, 10).astype(np.float64) + 1
    y, mean, variance = gen_npu_ops.fused_layer_norm(x, gamma, beta, begin_norm_axis=1, begin_params_axis=1, epsilon=1e-7)
    m = x.mean(axis=(1, 2), keepdims=True)
    v = ((x - m) ** 2).mean(axis=(1, 2), keepdims=True)
    np.testing.assert_allclose(y.numpy(), (x - m) / np.sqrt(v + 1e-7) * gamma + beta, rtol=1e-10)
    np.testing.assert_allclose(mean.numpy(), m) and np.testing.assert_allclose(variance.numpy(), v)


@pytest.mark.parametrize("name", ["lars_v2", "lamb_apply_weight_assign", "dynamic_rnn_grad", "basic_lstm_cell",
                                  "adam_apply_one_with_decay_assign"])
def test_npu_only_kernels_raise_naming_the_op(name: str) -> None:
    with pytest.raises(NpuOnlyOpError, match=f"gen_npu_ops.{name} is an Ascend NPU kernel"):
        getattr(gen_npu_ops, name)(tf.ones([2]))


def test_options_reject_wrong_types_and_unknown_names_naming_the_field() -> None:
    options = NpuConfig("npu_device.global_options()")
    with pytest.raises(TypeError, match=r"fusion_switch_file: expected str \(or None\), got int"):
        options.fusion_switch_file = 3
    with pytest.raises(ValueError, match=r"precision_mode: 'fp99' is not one of"):
        options.precision_mode = "fp99"
    with pytest.raises(AttributeError, match=r"dump_config has no option 'dumppath'; did you mean 'dump_path'"):
        options.dump_config.dumppath = "/tmp"
    with pytest.raises(NpuOptionError):  # also a ValueError, as upstream raises
        options.precison_mode = "allow_mix_precision"
    with pytest.raises(TypeError, match="is a group of options"):
        options.profiling_config = {}
    options.dump_config.enable_dump = True
    options.profiling_config.enable_profiling = True  # profiling is not an NPU-only setting
    assert options.npu_only_settings() == ["npu_device.global_options().dump_config.enable_dump"]


def test_one_rank_distribute_is_the_identity() -> None:
    grads = [tf.ones([2]), None]
    assert all_reduce(grads) is grads
    data = tf.data.Dataset.range(6)
    assert shard_and_rebatch_dataset(data, 4) == (data, 4)
    with pytest.raises(ValueError, match="reduction='avg'"):
        all_reduce(grads, "avg")
