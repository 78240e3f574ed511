"""npu_ops.dropout and npu_unary_ops.gelu against plain TensorFlow and the formulas, in real graphs."""
from __future__ import annotations

import math

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from npu_tf_profiling.bridge.npu_bridge import npu_ops

N = 200_000


def run(graph: tf.Graph, fetches, feed=None):
    with tf.Session(graph=graph) as sess:
        return sess.run(fetches, feed)


@pytest.mark.parametrize("keep_prob", [0.9, 0.5, 0.2])
def test_dropout_keeps_keep_prob_of_the_elements_and_scales_them_by_its_inverse(keep_prob: float) -> None:
    graph = tf.Graph()
    with graph.as_default():
        tf.set_random_seed(7)
        x = tf.random.uniform([N], 1.0, 2.0, seed=3)
        out = npu_ops.dropout(x, keep_prob, seed=11)
    x_value, out_value = run(graph, [x, out])
    kept = out_value != 0
    sd = math.sqrt(keep_prob * (1 - keep_prob) / N)
    assert abs(kept.mean() - keep_prob) < 5 * sd
    np.testing.assert_allclose(out_value[kept], x_value[kept] / keep_prob, rtol=1e-6)


def test_dropout_mask_is_the_tensorflow_dropout_mask_for_the_same_seeds() -> None:
    """Same graph seed and op seed: npu_ops.dropout and tf.nn.dropout drop the same elements."""
    results = []
    for make in (lambda x: npu_ops.dropout(x, 0.7, seed=5), lambda x: tf.nn.dropout(x, rate=0.3, seed=5)):
        graph = tf.Graph()
        with graph.as_default():
            tf.set_random_seed(1234)
            results.append(run(graph, make(tf.ones([1000]))))
    np.testing.assert_allclose(results[0], results[1], rtol=1e-6)
    assert 0 < np.count_nonzero(results[0]) < 1000


def test_dropout_noise_shape_drops_whole_rows_and_keep_prob_can_be_fed() -> None:
    graph = tf.Graph()
    with graph.as_default():
        keep_prob = tf.placeholder(tf.float32, [])
        out = npu_ops.dropout(tf.ones([500, 8]), keep_prob, noise_shape=[500, 1], seed=2)
    value = run(graph, out, {keep_prob: 0.5})
    rows_kept = value[:, 0] != 0
    np.testing.assert_array_equal(value[rows_kept], 2.0)  # every element of a kept row, scaled by 1/0.5
    np.testing.assert_array_equal(value[~rows_kept], 0.0)
    assert 150 < rows_kept.sum() < 350


def test_dropout_gradient_is_the_mask_over_keep_prob() -> None:
    graph = tf.Graph()
    with graph.as_default():
        x = tf.ones([1000])
        out = npu_ops.dropout(x, 0.25, seed=9)
        grad = tf.gradients(tf.reduce_sum(out), x)[0]
    out_value, grad_value = run(graph, [out, grad])
    np.testing.assert_allclose(grad_value, np.where(out_value != 0, 4.0, 0.0), rtol=1e-6)


def test_dropout_keep_prob_one_is_x_itself_and_bad_input_fails_early() -> None:
    with tf.Graph().as_default():
        x = tf.ones([3])
        assert npu_ops.dropout(x, 1.0) is x
        with pytest.raises(ValueError, match="keep_prob must be a float in \\(0, 1\\]"):
            npu_ops.dropout(x, 0.0)
        with pytest.raises(ValueError, match="keep_prob must be a float in \\(0, 1\\]"):
            npu_ops.dropout(x, 1.5)
        with pytest.raises(ValueError, match="x must be a floating point tensor, got a int32 tensor"):
            npu_ops.dropout(tf.ones([3], tf.int32), 0.5)


def tanh_gelu(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x**3)))


def test_gelu_is_the_tanh_approximation_and_differentiates_as_it() -> None:
    points = np.linspace(-6, 6, 241).astype(np.float32)
    graph = tf.Graph()
    with graph.as_default():
        x = tf.constant(points)
        out = npu_ops.gelu(x)
        grad = tf.gradients(tf.reduce_sum(out), x)[0]
    value, grad_value = run(graph, [out, grad])
    np.testing.assert_allclose(value, tanh_gelu(points), rtol=1e-5, atol=1e-6)
    wide = points.astype(np.float64)
    np.testing.assert_allclose(grad_value, (tanh_gelu(wide + 1e-6) - tanh_gelu(wide - 1e-6)) / 2e-6, rtol=1e-4, atol=1e-5)
    exact_at_one = 0.5 * (1 + math.erf(1 / math.sqrt(2)))  # the erf form differs by ~1.5e-4 at x=1
    assert abs(value[points == 1.0][0] - exact_at_one) > 1e-4
