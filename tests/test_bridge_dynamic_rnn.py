"""DynamicRNN / DynamicGRUV2 against TensorFlow's own LSTM/GRU and a NumPy reference, in real graphs."""
from __future__ import annotations

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from npu_tf_profiling.bridge.npu_bridge.dynamic_rnn import DynamicGRUV2, DynamicRNN

T, B, IN, H = 6, 3, 5, 4
LENGTHS = np.array([6, 2, 4], np.int32)
rng = np.random.RandomState(0)
X = rng.uniform(-1, 1, (T, B, IN)).astype(np.float32)
W = rng.uniform(-0.5, 0.5, (IN + H, 4 * H)).astype(np.float32)
BIAS = rng.uniform(-0.5, 0.5, (4 * H,)).astype(np.float32)
H0 = rng.uniform(-0.5, 0.5, (1, B, H)).astype(np.float32)
C0 = rng.uniform(-0.5, 0.5, (1, B, H)).astype(np.float32)
TOL = dict(rtol=1e-5, atol=1e-6)


def sigmoid(v: np.ndarray) -> np.ndarray:
    return 1 / (1 + np.exp(-v))


def numpy_lstm(x, w, b, h, c, lengths, forget_bias=0.0, cell_clip=-1.0, reverse=False) -> list[np.ndarray]:
    """The NPU LSTM kernel's recurrence, step by step: concat(x, h) @ w + b, gates i, j, f, o; masked steps carry state."""
    steps = [None] * len(x)
    for t in (reversed(range(len(x))) if reverse else range(len(x))):
        i, j, f, o = np.split(np.concatenate([x[t], h], 1) @ w + b, 4, axis=1)
        i, j, f, o = sigmoid(i), np.tanh(j), sigmoid(f + forget_bias), sigmoid(o)
        new_c = f * c + i * j
        if cell_clip > 0:
            new_c = np.minimum(new_c, cell_clip)
        keep = (t < lengths)[:, None]
        c = np.where(keep, new_c, c)
        tanhc = np.tanh(c)
        y = np.where(keep, o * tanhc, 0.0)
        h = np.where(keep, o * tanhc, h)
        steps[t] = (y, h, c, i, j, f, o, tanhc)
    return [np.stack([step[k] for step in steps]) for k in range(8)]


def numpy_gru(x, w_in, w_hid, b_in, b_hid, h, lengths, gate_order="zrh") -> list[np.ndarray]:
    steps = []
    for t in range(len(x)):
        x_a, x_b, x_n = np.split(x[t] @ w_in + b_in, 3, axis=1)
        h_a, h_b, hidden_new = np.split(h @ w_hid + b_hid, 3, axis=1)
        z, r = sigmoid(x_a + h_a), sigmoid(x_b + h_b)
        if gate_order == "rzh":
            z, r = r, z
        new = np.tanh(x_n + r * hidden_new)
        new_h = z * h + (1 - z) * new
        keep = (t < lengths)[:, None]
        y = np.where(keep, new_h, 0.0)
        h = np.where(keep, new_h, h)
        steps.append((y, h, z, r, new, hidden_new))
    return [np.stack([step[k] for step in steps]) for k in range(6)]


def evaluate(graph: tf.Graph, fetches, feed=None):
    with tf.Session(graph=graph) as sess:
        sess.run(tf.global_variables_initializer())
        return sess.run(fetches, feed)


@pytest.mark.parametrize("lengths", [None, LENGTHS])
def test_lstm_outputs_match_the_numpy_recurrence(lengths) -> None:
    graph = tf.Graph()
    with graph.as_default():
        lstm = DynamicRNN(H, dtype=tf.float32, forget_bias=1.0)
        outputs = lstm(tf.constant(X), seq_length=None if lengths is None else tf.constant(lengths),
                       init_h=tf.constant(H0), init_c=tf.constant(C0), weight=tf.constant(W), bias=tf.constant(BIAS))
    got = evaluate(graph, outputs)
    want = numpy_lstm(X, W, BIAS, H0[0], C0[0], LENGTHS if lengths is not None else np.full(B, T), forget_bias=1.0)
    assert type(got).__name__ == "DynamicRNNOutput" and got._fields == ("y", "output_h", "output_c", "i", "j", "f", "o", "tanhc")
    for name, g, w in zip(got._fields, got, want):
        assert g.shape == (T, B, H), name
        np.testing.assert_allclose(g, w, **TOL, err_msg=name)
    if lengths is not None:  # past its length a sequence outputs zeros and repeats its last state
        np.testing.assert_array_equal(got.y[2:, 1], 0.0)
        np.testing.assert_array_equal(got.output_h[2:, 1], np.broadcast_to(got.output_h[1, 1], (T - 2, H)))
        np.testing.assert_array_equal(got.output_c[4:, 2], np.broadcast_to(got.output_c[3, 2], (T - 4, H)))


@pytest.mark.filterwarnings("ignore:`tf.nn.rnn_cell.BasicLSTMCell` is deprecated")
def test_lstm_equals_tensorflow_dynamic_rnn_with_basic_lstm_cell_values_and_gradients() -> None:
    """Same weights in TensorFlow's BasicLSTMCell (same [x, h] layout and i, j, f, o order): same outputs, same gradients."""
    graph = tf.Graph()
    with graph.as_default():
        x = tf.constant(X)
        lengths = tf.constant(LENGTHS)
        probe = tf.constant(rng.uniform(-1, 1, (T, B, H)).astype(np.float32))

        lstm = DynamicRNN(H, dtype=tf.float32, forget_bias=1.0)
        ours = lstm(x, seq_length=lengths, init_h=tf.constant(H0), init_c=tf.constant(C0))
        our_loss = tf.reduce_sum(ours.y * probe) + tf.reduce_sum(ours.output_h[-1]) + tf.reduce_sum(ours.output_c[-1])

        with tf.variable_scope("reference"):
            cell = tf.nn.rnn_cell.BasicLSTMCell(H, forget_bias=1.0)
            state = tf.nn.rnn_cell.LSTMStateTuple(tf.constant(C0[0]), tf.constant(H0[0]))
            ref_y, ref_state = tf.nn.dynamic_rnn(cell, x, sequence_length=lengths, initial_state=state, time_major=True)
        ref_loss = tf.reduce_sum(ref_y * probe) + tf.reduce_sum(ref_state.h) + tf.reduce_sum(ref_state.c)
        ref_kernel, ref_bias = tf.trainable_variables("reference")
        same_weights = tf.group(ref_kernel.assign(lstm.trainable_weights[0]), ref_bias.assign(lstm.trainable_weights[1]))

        grads = tf.gradients(our_loss, [x] + lstm.trainable_weights) + tf.gradients(ref_loss, [x, ref_kernel, ref_bias])
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(same_weights)
            got = sess.run([ours.y, ours.output_h[-1], ours.output_c[-1], ref_y, ref_state.h, ref_state.c, grads])
    for mine, reference in zip(got[:3], got[3:6]):
        np.testing.assert_allclose(mine, reference, **TOL)
    for mine, reference in zip(got[6][:3], got[6][3:]):
        np.testing.assert_allclose(mine, reference, rtol=1e-4, atol=1e-5)


def test_lstm_variables_are_upstreams() -> None:
    graph = tf.Graph()
    with graph.as_default():
        DynamicRNN(H, dtype=tf.float32)(tf.placeholder(tf.float32, [T, None, IN]))
        DynamicRNN(H, dtype=tf.float32, direction="BIDIRECTIONAL")(tf.placeholder(tf.float32, [T, B, IN]))
        shapes = {v.op.name: (v.shape.as_list(), v in tf.trainable_variables()) for v in tf.global_variables()}
    assert shapes == {
        "dynamic_rnn/dynamicbase/seq_length": ([16], False),  # upstream's length for an unknown batch size
        "dynamic_rnn/dynamicrnn/w": ([IN + H, 4 * H], True),
        "dynamic_rnn/dynamicrnn/b": ([4 * H], True),
        "dynamic_rnn_1/dynamicbase/seq_length": ([B], False),
        "dynamic_rnn_1/dynamicrnn/w": ([2, IN + H, 4 * H], True),
        "dynamic_rnn_1/dynamicrnn/b": ([2, 4 * H], True),
    }


def test_bidirectional_lstm_stacks_forward_and_time_reversed_backward() -> None:
    w2 = np.stack([W, W[:, ::-1].copy()])
    b2 = np.stack([BIAS, -BIAS])
    h2, c2 = np.concatenate([H0, -H0]), np.concatenate([C0, C0 * 0.5])
    graph = tf.Graph()
    with graph.as_default():
        lstm = DynamicRNN(H, dtype=tf.float32, direction="BIDIRECTIONAL")
        outputs = lstm(tf.constant(X), seq_length=tf.constant(LENGTHS), init_h=tf.constant(h2), init_c=tf.constant(c2),
                       weight=tf.constant(w2), bias=tf.constant(b2))
    got = evaluate(graph, outputs)
    forward = numpy_lstm(X, w2[0], b2[0], h2[0], c2[0], LENGTHS)
    backward = numpy_lstm(X, w2[1], b2[1], h2[1], c2[1], LENGTHS, reverse=True)
    for g, f, b in zip(got, forward, backward):
        assert g.shape == (2, T, B, H)
        np.testing.assert_allclose(g[0], f, **TOL)
        np.testing.assert_allclose(g[1], b, **TOL)


def test_lstm_cell_clip_caps_the_cell_state_and_float16_follows_float32() -> None:
    graph = tf.Graph()
    with graph.as_default():
        clipped = DynamicRNN(H, dtype=tf.float32, cell_clip=0.05)(
            tf.constant(X), init_h=tf.constant(H0), init_c=tf.constant(C0), weight=tf.constant(W), bias=tf.constant(BIAS))
        half = DynamicRNN(H, dtype=tf.float16)(tf.constant(X), weight=tf.constant(W, tf.float16), bias=tf.constant(BIAS, tf.float16))
    got_clipped, got_half = evaluate(graph, [clipped, half])
    want = numpy_lstm(X, W, BIAS, H0[0], C0[0], np.full(B, T), cell_clip=0.05)
    for g, w in zip(got_clipped, want):
        np.testing.assert_allclose(g, w, **TOL)
    assert got_clipped.output_c.max() == np.float32(0.05) and got_clipped.output_c.min() < -0.05  # capped from above only
    assert got_half.y.dtype == np.float16
    np.testing.assert_allclose(got_half.y, numpy_lstm(X, W, BIAS, 0 * H0[0], 0 * C0[0], np.full(B, T))[0], atol=5e-3)


@pytest.mark.parametrize("gate_order", ["zrh", "rzh"])
def test_gru_outputs_match_the_numpy_recurrence(gate_order: str) -> None:
    graph = tf.Graph()
    with graph.as_default():
        gru = DynamicGRUV2(H, dtype=tf.float32, gate_order=gate_order)
        outputs = gru(tf.constant(X), seq_length=tf.constant(LENGTHS), init_h=tf.constant(H0))
        variables = gru.trainable_weights
    got, weights = evaluate(graph, [outputs, variables])
    want = numpy_gru(X, *weights, H0[0], LENGTHS, gate_order)
    assert got._fields == ("y", "output_h", "update", "reset", "new", "hidden_new")
    for name, g, w in zip(got._fields, got, want):
        np.testing.assert_allclose(g, w, **TOL, err_msg=name)
    assert [v.op.name for v in variables] == [f"dynamic_gruv2/dynamicgruv2/{n}" for n in ("weight_input", "weight_hidden", "bias_input", "bias_hidden")]
    assert [w.shape for w in weights] == [(IN, 3 * H), (H, 3 * H), (3 * H,), (3 * H,)]


def test_gru_equals_keras_gru_with_reset_after() -> None:
    """Keras' GRU(reset_after=True) has the z, r, h layout and h = z*h_prev + (1-z)*n: with the same weights, the same sequence."""
    graph = tf.Graph()
    with graph.as_default():
        x = tf.constant(X)
        gru = DynamicGRUV2(H, dtype=tf.float32)
        ours = gru(x, init_h=tf.constant(H0[0]))
        keras_gru = tf.keras.layers.GRU(H, recurrent_activation="sigmoid", return_sequences=True, return_state=True, reset_after=True, time_major=True)
        ref_y, ref_h = keras_gru(x, initial_state=tf.constant(H0[0]))
        w_in, w_hid, b_in, b_hid = gru.trainable_weights
        cell = keras_gru.cell
        same = tf.group(cell.kernel.assign(w_in), cell.recurrent_kernel.assign(w_hid), cell.bias.assign(tf.stack([b_in, b_hid])))
        with tf.Session() as sess:
            sess.run(tf.global_variables_initializer())
            sess.run(same)
            got_y, got_h, want_y, want_h = sess.run([ours.y, ours.output_h[-1], ref_y, ref_h])
    np.testing.assert_allclose(got_y, want_y, **TOL)
    np.testing.assert_allclose(got_h, want_h, **TOL)


@pytest.mark.parametrize(
    "layer, kwargs, message",
    [
        (DynamicRNN, {"keep_prob": 0.5}, "keep_prob=0.5: the NPU kernel has no dropout"),
        (DynamicRNN, {"num_proj": 8}, "num_proj=8: the NPU kernel has no projection"),
        (DynamicRNN, {"use_peephole": True}, "use_peephole=True"),
        (DynamicRNN, {"time_major": False}, "time_major=False"),
        (DynamicRNN, {"cell_type": "GRU"}, "cell_type='GRU'"),
        (DynamicRNN, {"direction": "SIDEWAYS"}, "direction='SIDEWAYS'"),
        (DynamicRNN, {"cell_depth": 2}, "cell_depth=2"),
        (DynamicGRUV2, {"direction": "BIDIRECTIONAL"}, "direction='BIDIRECTIONAL'"),
        (DynamicGRUV2, {"gate_order": "hzr"}, "gate_order='hzr'"),
        (DynamicGRUV2, {"reset_after": False}, "reset_after=False"),
        (DynamicGRUV2, {"activation": "relu"}, "activation='relu'"),
    ],
)
def test_options_the_npu_kernels_reject_fail_at_construction(layer, kwargs, message: str) -> None:
    with pytest.raises(ValueError, match=f"^{layer.__name__}: {message}".replace("(", "\\(").replace("[", "\\[")):
        layer(H, tf.float32, **kwargs)


def test_unknown_input_size_fails_at_first_call() -> None:
    with tf.Graph().as_default():
        with pytest.raises(ValueError, match="DynamicRNN: input_size \\(x.shape\\[2\\]\\) must be known"):
            DynamicRNN(H, tf.float32)(tf.placeholder(tf.float32, [T, B, None]))
