"""`DynamicRNN` (LSTM) and `DynamicGRUV2` of npu_bridge, computed with TensorFlow ops.

On the NPU these layers are single fused kernels (DynamicRNN, DynamicGRUV2). Scripts
use them for speed, but what they compute is a plain time-major LSTM / GRU, so here
the same layers (same constructor, call signature, variables and outputs) run the
recurrence as a `tf.scan` over TensorFlow ops. Gradients come from TensorFlow's
automatic differentiation instead of the NPU's fused gradient kernels.

The recurrences, in the NPU kernels' layout:

* LSTM: `w` is `[input_size + hidden_size, 4*hidden_size]` applied to `concat(x_t, h)`,
  gates in i, j, f, o order; `i, f, o = sigmoid(.)` with `forget_bias` added before
  the forget sigmoid, `j = tanh(.)`, `c = f*c_prev + i*j`, `tanhc = tanh(c)`,
  `h = o*tanhc`. Outputs `(y, output_h, output_c, i, j, f, o, tanhc)`, each
  `[num_step, batch, hidden_size]` (the gates are the activated values).
* GRU (reset_after): `weight_input [input_size, 3H]`, `weight_hidden [H, 3H]`, gates
  z, r, n in `gate_order` ("zrh" or "rzh"); `z, r = sigmoid(x W_x + b_x + h W_h + b_h)`,
  `hidden_new = h W_hn + b_hn`, `n = tanh(x W_xn + b_xn + r*hidden_new)`,
  `h = z*h_prev + (1-z)*n`. Outputs `(y, output_h, update, reset, new, hidden_new)`.

With `seq_length` (int32 `[batch]`), steps at or past a sequence's length leave the
state unchanged and give `y = 0`, while `output_h`/`output_c` repeat the carried
state, as the NPU kernel's sequence mask does. Without it every step counts.

The options the NPU kernels reject (upstream documents them as unsupported:
peepholes, dropout via keep_prob, projection, cell_depth > 1, batch-major input,
other activations or cell types) raise ValueError at construction instead of at
graph compile time. `is_training` changes nothing here: the gate outputs are always
computed (they are what a gradient needs).
"""
from __future__ import annotations

import math
import numbers
from typing import Any, NamedTuple

import tensorflow.compat.v1 as tf1

DYNAMIC_RNN_UNIDIRECTION = "UNIDIRECTIONAL"
DYNAMIC_RNN_BIDIRECTION = "BIDIRECTIONAL"

UNKNOWN_BATCH_SIZE = 16
"""Upstream's `seq_length` variable length when the batch size is not static."""


class DynamicRNNOutput(NamedTuple):
    y: Any
    output_h: Any
    output_c: Any
    i: Any
    j: Any
    f: Any
    o: Any
    tanhc: Any


class DynamicGRUV2Output(NamedTuple):
    y: Any
    output_h: Any
    update: Any
    reset: Any
    new: Any
    hidden_new: Any


def _legacy_layer_base() -> type:
    """`tf.compat.v1.layers.Layer`, or, where TensorFlow has none, a base that says what to install.

    TensorFlow 2.16+ with Keras 3 has no v1 layers. The module must still import there
    (the `npu_bridge` alias imports it); only using the layers fails, with the fix.
    """
    try:
        return tf1.layers.Layer
    except AttributeError as exc:
        reason = f"TensorFlow {tf1.__version__} has no tf.compat.v1.layers ({exc})"

    class UnavailableLayer:
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            raise ImportError(
                f"{type(self).__name__} needs tf.compat.v1.layers: {reason}. Use TensorFlow <= 2.15, or install "
                "tf_keras (the version matching TensorFlow) and set TF_USE_LEGACY_KERAS=1 before importing TensorFlow"
            )

    return UnavailableLayer


class _DynamicBasic(_legacy_layer_base()):
    """What both layers share: upstream's options, their validation, and the `seq_length` variable.

    A `tf.compat.v1.layers.Layer`, as upstream's, so variables are created on the first
    call under the layer's scope (`dynamic_rnn/dynamicrnn/w`, ...) and match upstream's
    names in checkpoints.
    """

    def __init__(self, hidden_size, dtype, direction=DYNAMIC_RNN_UNIDIRECTION, cell_depth=1, keep_prob=1.0,
                 cell_clip=-1.0, num_proj=0, time_major=True, activation="tanh", is_training=True):
        super().__init__(dtype=dtype)
        kind = type(self).__name__
        _require(kind, isinstance(hidden_size, numbers.Integral) and hidden_size > 0, f"hidden_size must be a positive int, got {hidden_size!r}")
        _require(kind, cell_depth == 1, f"cell_depth={cell_depth!r}: the NPU kernel supports one layer only; stack layers instead")
        _require(kind, keep_prob == 1.0, f"keep_prob={keep_prob!r}: the NPU kernel has no dropout; apply npu_ops.dropout to the outputs")
        _require(kind, num_proj == 0, f"num_proj={num_proj!r}: the NPU kernel has no projection; add a dense layer on the outputs")
        _require(kind, time_major is True, "time_major=False: the NPU kernel takes [num_step, batch, input_size] only; transpose the input")
        _require(kind, activation == "tanh", f"activation={activation!r}: the NPU kernel supports 'tanh' only")
        self._hidden_size = hidden_size
        self._direction = direction
        self._cell_depth = cell_depth
        self._keep_prob = keep_prob
        self._cell_clip = cell_clip
        self._num_proj = num_proj
        self._time_major = time_major
        self._activation = activation
        self._is_training = is_training

    direction = property(lambda self: self._direction)
    cell_depth = property(lambda self: self._cell_depth)
    keep_prob = property(lambda self: self._keep_prob)
    cell_clip = property(lambda self: self._cell_clip)
    num_proj = property(lambda self: self._num_proj)
    time_major = property(lambda self: self._time_major)
    activation = property(lambda self: self._activation)
    is_training = property(lambda self: self._is_training)

    def build(self, input_shape):
        """Creates the variables on the first call, when the input size is known.

        Upstream's non-trainable `dynamicbase/seq_length` variable (full length per batch
        entry) is created too: nothing reads it when `seq_length` is not passed (every
        step counts), it exists so that variable lists and checkpoints are those of an
        NPU run, in both directions.
        """
        input_shape = tf1.TensorShape(input_shape)
        kind = type(self).__name__
        _require(kind, input_shape.rank == 3, f"x must be [num_step, batch, input_size], got shape {input_shape}")
        input_size = tf1.dimension_value(input_shape[2])
        _require(kind, input_size is not None, f"input_size (x.shape[2]) must be known, got shape {input_shape}")
        time_size = tf1.dimension_value(input_shape[0]) or 1
        batch_size = tf1.dimension_value(input_shape[1]) or UNKNOWN_BATCH_SIZE
        self.add_weight(
            "dynamicbase/seq_length", shape=[batch_size], dtype=tf1.int32,
            initializer=tf1.constant_initializer(time_size), trainable=False,
        )
        self._build_weights(input_size)
        super().build(input_shape)  # marks the layer built; later add_weight calls would look for existing variables

    def _build_weights(self, input_size: int) -> None:
        raise NotImplementedError


class DynamicRNN(_DynamicBasic):
    """Time-major LSTM with upstream's constructor, call signature, variables and 8 outputs.

    Variables: `dynamicrnn/w` `[input_size + hidden_size, 4*hidden_size]` (Glorot-uniform,
    seed 10, as upstream) and `dynamicrnn/b` `[4*hidden_size]` (zeros); with
    `direction=BIDIRECTIONAL` both get a leading dimension of 2 (forward, backward),
    `init_h`/`init_c` are `[2, batch, hidden]` and every output is stacked to
    `[2, num_step, batch, hidden]`, the backward direction kept in input time order.
    `cell_clip > 0` caps the cell state from above, as the NPU LSTM kernel does.
    """

    def __init__(self, hidden_size, dtype, cell_type="LSTM", direction=DYNAMIC_RNN_UNIDIRECTION, cell_depth=1,
                 use_peephole=False, keep_prob=1.0, cell_clip=-1.0, num_proj=0, time_major=True, activation="tanh",
                 forget_bias=0.0, is_training=True):
        super().__init__(hidden_size, dtype, direction=direction, cell_depth=cell_depth, keep_prob=keep_prob,
                         cell_clip=cell_clip, num_proj=num_proj, time_major=time_major, activation=activation,
                         is_training=is_training)
        _require("DynamicRNN", cell_type == "LSTM", f"cell_type={cell_type!r}: only 'LSTM' is supported (use DynamicGRUV2 for a GRU)")
        _require("DynamicRNN", direction in (DYNAMIC_RNN_UNIDIRECTION, DYNAMIC_RNN_BIDIRECTION),
                 f"direction={direction!r}: expected {DYNAMIC_RNN_UNIDIRECTION!r} or {DYNAMIC_RNN_BIDIRECTION!r}")
        _require("DynamicRNN", use_peephole is False, "use_peephole=True: the NPU kernel has no peephole connections")
        self._cell_type = cell_type
        self._use_peephole = use_peephole
        self._forget_bias = forget_bias
        self._rnn_w = None
        self._rnn_b = None

    cell_type = property(lambda self: self._cell_type)
    use_peephole = property(lambda self: self._use_peephole)
    forget_bias = property(lambda self: self._forget_bias)

    def _build_weights(self, input_size):
        directions = [2] if self._direction == DYNAMIC_RNN_BIDIRECTION else []
        self._rnn_w = self.add_weight(
            "dynamicrnn/w", shape=directions + [input_size + self._hidden_size, 4 * self._hidden_size], dtype=self.dtype,
            initializer=tf1.glorot_uniform_initializer(seed=10),
        )
        self._rnn_b = self.add_weight(
            "dynamicrnn/b", shape=directions + [4 * self._hidden_size], dtype=self.dtype,
            initializer=tf1.zeros_initializer(),
        )

    def call(self, x, seq_length=None, init_h=None, init_c=None, weight=None, bias=None):
        x = tf1.cast(x, self.dtype)
        keep = _step_mask(seq_length, x)
        weight = self._rnn_w if weight is None else weight
        bias = self._rnn_b if bias is None else bias
        if self._direction == DYNAMIC_RNN_UNIDIRECTION:
            h0, c0 = self._initial_state(init_h, x, 1), self._initial_state(init_c, x, 1)
            return DynamicRNNOutput(*self._lstm(x, keep, weight, bias, h0[0], c0[0], reverse=False))
        h0, c0 = self._initial_state(init_h, x, 2), self._initial_state(init_c, x, 2)
        forward = self._lstm(x, keep, weight[0], bias[0], h0[0], c0[0], reverse=False)
        backward = self._lstm(x, keep, weight[1], bias[1], h0[1], c0[1], reverse=True)
        return DynamicRNNOutput(*(tf1.stack([f, b]) for f, b in zip(forward, backward)))

    def _initial_state(self, given, x, directions):
        if given is None:
            return tf1.zeros([directions, tf1.shape(x)[1], self._hidden_size], dtype=self.dtype)
        return tf1.reshape(tf1.cast(given, self.dtype), [directions, -1, self._hidden_size])

    def _lstm(self, x, keep, weight, bias, h0, c0, reverse):
        input_size = tf1.dimension_value(x.shape[2])
        weight_x, weight_h = weight[:input_size], weight[input_size:]
        x_proj = tf1.tensordot(x, weight_x, axes=1) + bias  # every step's input term in one product
        zeros = tf1.zeros_like(h0)

        def step(previous, elems):
            _, h_prev, c_prev = previous[:3]
            x_proj_t, keep_t = elems
            i, j, f, o = tf1.split(x_proj_t + tf1.matmul(h_prev, weight_h), 4, axis=1)
            i, j, f, o = tf1.sigmoid(i), tf1.tanh(j), tf1.sigmoid(f + self._forget_bias), tf1.sigmoid(o)
            c = f * c_prev + i * j
            if self._cell_clip > 0:
                c = tf1.minimum(c, tf1.cast(self._cell_clip, c.dtype))
            c = _select(keep_t, c, c_prev)
            tanhc = tf1.tanh(c)
            h = o * tanhc
            return (_select(keep_t, h, zeros), _select(keep_t, h, h_prev), c, i, j, f, o, tanhc)

        initial = (zeros, h0, c0) + (zeros,) * 5
        return tf1.scan(step, (x_proj, keep), initializer=initial, reverse=reverse)


class DynamicGRUV2(_DynamicBasic):
    """Time-major GRU (reset gate after the hidden product) with upstream's signature, variables and 6 outputs.

    Variables, all uniform in +-1/sqrt(hidden_size) as upstream: `dynamicgruv2/weight_input`
    `[input_size, 3H]`, `dynamicgruv2/weight_hidden` `[H, 3H]`, `dynamicgruv2/bias_input`
    and `dynamicgruv2/bias_hidden` `[3H]`. `init_h` may be `[batch, H]` (upstream's default
    state shape) or `[1, batch, H]`.
    """

    GATE_ORDERS = ("zrh", "rzh")

    def __init__(self, hidden_size, dtype, direction=DYNAMIC_RNN_UNIDIRECTION, cell_depth=1, keep_prob=1.0,
                 cell_clip=-1.0, num_proj=0, time_major=True, activation="tanh", gate_order="zrh", reset_after=True,
                 is_training=True):
        super().__init__(hidden_size, dtype, direction=direction, cell_depth=cell_depth, keep_prob=keep_prob,
                         cell_clip=cell_clip, num_proj=num_proj, time_major=time_major, activation=activation,
                         is_training=is_training)
        _require("DynamicGRUV2", direction == DYNAMIC_RNN_UNIDIRECTION, f"direction={direction!r}: only {DYNAMIC_RNN_UNIDIRECTION!r} is supported")
        _require("DynamicGRUV2", cell_clip == -1.0, f"cell_clip={cell_clip!r}: the GRU kernel has no state clipping")
        _require("DynamicGRUV2", gate_order in self.GATE_ORDERS, f"gate_order={gate_order!r}: expected one of {self.GATE_ORDERS}")
        _require("DynamicGRUV2", reset_after is True, "reset_after=False is not supported; use tf.keras.layers.GRU(reset_after=False)")
        self._gate_order = gate_order
        self._reset_after = reset_after
        self._gruv2_weight_input = None
        self._gruv2_weight_hidden = None
        self._bias_input = None
        self._bias_hidden = None

    gate_order = property(lambda self: self._gate_order)
    reset_after = property(lambda self: self._reset_after)

    def _build_weights(self, input_size):
        stdv = 1.0 / math.sqrt(self._hidden_size)
        gates = 3 * self._hidden_size

        def weight(name, shape):
            return self.add_weight(f"dynamicgruv2/{name}", shape=shape, dtype=self.dtype,
                                   initializer=tf1.random_uniform_initializer(-stdv, stdv))

        self._gruv2_weight_input = weight("weight_input", [input_size, gates])
        self._gruv2_weight_hidden = weight("weight_hidden", [self._hidden_size, gates])
        self._bias_input = weight("bias_input", [gates])
        self._bias_hidden = weight("bias_hidden", [gates])

    def call(self, x, seq_length=None, init_h=None):
        x = tf1.cast(x, self.dtype)
        keep = _step_mask(seq_length, x)
        if init_h is None:
            h0 = tf1.zeros([tf1.shape(x)[1], self._hidden_size], dtype=self.dtype)
        else:
            h0 = tf1.reshape(tf1.cast(init_h, self.dtype), [-1, self._hidden_size])
        x_proj = tf1.tensordot(x, self._gruv2_weight_input, axes=1) + self._bias_input
        zeros = tf1.zeros_like(h0)
        update_first = self._gate_order == "zrh"

        def step(previous, elems):
            h_prev = previous[1]
            x_proj_t, keep_t = elems
            x_a, x_b, x_n = tf1.split(x_proj_t, 3, axis=1)
            h_a, h_b, hidden_new = tf1.split(tf1.matmul(h_prev, self._gruv2_weight_hidden) + self._bias_hidden, 3, axis=1)
            first, second = tf1.sigmoid(x_a + h_a), tf1.sigmoid(x_b + h_b)
            update, reset = (first, second) if update_first else (second, first)
            new = tf1.tanh(x_n + reset * hidden_new)
            h = update * h_prev + (1 - update) * new
            return (_select(keep_t, h, zeros), _select(keep_t, h, h_prev), update, reset, new, hidden_new)

        initial = (zeros, h0) + (zeros,) * 4
        return DynamicGRUV2Output(*tf1.scan(step, (x_proj, keep), initializer=initial))


def _step_mask(seq_length, x):
    """[num_step, batch, 1] bool: True where a step is within its sequence (all True without seq_length)."""
    num_step, batch = tf1.shape(x)[0], tf1.shape(x)[1]
    if seq_length is None:
        return tf1.ones([num_step, batch, 1], dtype=tf1.bool)
    within = tf1.sequence_mask(tf1.cast(seq_length, tf1.int32), maxlen=num_step)  # [batch, num_step]
    return tf1.expand_dims(tf1.transpose(within), -1)


def _select(keep, computed, carried):
    return tf1.where_v2(keep, computed, carried)


def _require(layer: str, condition: bool, message: str) -> None:
    if not condition:
        raise ValueError(f"{layer}: {message}")
