"""DynamicRNN / DynamicGRUV2 of npu_bridge built from TensorFlow ops (skeleton)."""
from __future__ import annotations

DYNAMIC_RNN_UNIDIRECTION = "UNIDIRECTIONAL"
DYNAMIC_RNN_BIDIRECTION = "BIDIRECTIONAL"


class DynamicRNN:
    def __init__(self, hidden_size, dtype, cell_type="LSTM", direction=DYNAMIC_RNN_UNIDIRECTION, cell_depth=1,
                 use_peephole=False, keep_prob=1.0, cell_clip=-1.0, num_proj=0, time_major=True, activation="tanh",
                 forget_bias=0.0, is_training=True):
        raise NotImplementedError("being written on branch bridge-ops")

    def __call__(self, x, seq_length=None, init_h=None, init_c=None, weight=None, bias=None):
        raise NotImplementedError


class DynamicGRUV2:
    def __init__(self, hidden_size, dtype, direction=DYNAMIC_RNN_UNIDIRECTION, cell_depth=1, keep_prob=1.0,
                 cell_clip=-1.0, num_proj=0, time_major=True, activation="tanh", gate_order="zrh", reset_after=True,
                 is_training=True):
        raise NotImplementedError("being written on branch bridge-ops")

    def __call__(self, x, seq_length=None, init_h=None):
        raise NotImplementedError
