"""`tf.contrib.rnn`: `tf.compat.v1.nn.rnn_cell`'s cells, and the names TensorFlow 2 dropped.

TensorFlow 1.15 exported the static RNN functions under contrib.rnn as well as
tf.nn; `LSTMBlockCell` was a fused kernel computing LSTMCell's formula (gates
i, j, f, o, forget bias added to f, optional peepholes and cell clipping), so
it is that cell here, with the fused cell's defaults. `stack_bidirectional_dynamic_rnn`
is contrib's function: each layer a `bidirectional_dynamic_rnn` fed the previous
layer's concatenated outputs, under contrib's variable scopes (so checkpoints
keep their names).
"""
from __future__ import annotations

from typing import Any, Sequence

import tensorflow as tf

tf1 = tf.compat.v1
_cells = tf1.nn.rnn_cell  # the cells `tf.nn.rnn_cell` gives the script (Keras' legacy cells), so the two mix
BasicLSTMCell, BasicRNNCell, GRUCell, LSTMCell, RNNCell = (_cells.BasicLSTMCell, _cells.BasicRNNCell, _cells.GRUCell,
                                                        _cells.LSTMCell, _cells.RNNCell)
DeviceWrapper, DropoutWrapper, MultiRNNCell, ResidualWrapper = (_cells.DeviceWrapper, _cells.DropoutWrapper,
                                                                _cells.MultiRNNCell, _cells.ResidualWrapper)
LSTMStateTuple = _cells.LSTMStateTuple
static_rnn = tf1.nn.static_rnn
static_bidirectional_rnn = tf1.nn.static_bidirectional_rnn
static_state_saving_rnn = tf1.nn.static_state_saving_rnn


class LSTMBlockCell(LSTMCell):
    """TensorFlow 1.15's `contrib.rnn.LSTMBlockCell(num_units, forget_bias=1.0, cell_clip=None, use_peephole=False)`."""

    def __init__(self, num_units: int, forget_bias: float = 1.0, cell_clip: float | None = None,
                 use_peephole: bool = False, dtype: Any = None, reuse: Any = None, name: str = "lstm_cell") -> None:
        super().__init__(num_units, use_peepholes=use_peephole, cell_clip=cell_clip, forget_bias=forget_bias,
                         state_is_tuple=True, reuse=reuse, name=name, dtype=dtype)


def stack_bidirectional_dynamic_rnn(cells_fw: Sequence[Any], cells_bw: Sequence[Any], inputs: Any,
                                    initial_states_fw: Sequence[Any] | None = None,
                                    initial_states_bw: Sequence[Any] | None = None, dtype: Any = None,
                                    sequence_length: Any = None, parallel_iterations: int | None = None,
                                    time_major: bool = False, scope: Any = None, swap_memory: bool = False) -> tuple:
    """Returns `(outputs, output_states_fw, output_states_bw)`, as TensorFlow 1.15's contrib function."""
    if not cells_fw or not cells_bw or len(cells_fw) != len(cells_bw):
        raise ValueError("stack_bidirectional_dynamic_rnn: cells_fw and cells_bw must be non-empty lists of equal length")
    for name, states in (("initial_states_fw", initial_states_fw), ("initial_states_bw", initial_states_bw)):
        if states is not None and len(states) != len(cells_fw):
            raise ValueError(f"stack_bidirectional_dynamic_rnn: {name} must have one state per cell")
    states_fw, states_bw, layer_inputs = [], [], inputs
    with tf1.variable_scope(scope or "stack_bidirectional_rnn"):
        for index, (cell_fw, cell_bw) in enumerate(zip(cells_fw, cells_bw)):
            with tf1.variable_scope(f"cell_{index}"):
                (out_fw, out_bw), (state_fw, state_bw) = tf1.nn.bidirectional_dynamic_rnn(
                    cell_fw, cell_bw, layer_inputs,
                    initial_state_fw=initial_states_fw[index] if initial_states_fw else None,
                    initial_state_bw=initial_states_bw[index] if initial_states_bw else None,
                    sequence_length=sequence_length, parallel_iterations=parallel_iterations, dtype=dtype,
                    swap_memory=swap_memory, time_major=time_major)
                layer_inputs = tf.concat([out_fw, out_bw], 2)
                states_fw.append(state_fw)
                states_bw.append(state_bw)
    return layer_inputs, tuple(states_fw), tuple(states_bw)


__all__ = ["BasicLSTMCell", "BasicRNNCell", "GRUCell", "LSTMCell", "RNNCell", "DeviceWrapper", "DropoutWrapper",
           "MultiRNNCell", "ResidualWrapper", "LSTMStateTuple", "LSTMBlockCell", "stack_bidirectional_dynamic_rnn", "static_rnn", "static_bidirectional_rnn",
           "static_state_saving_rnn"]
