"""`npu_device.gen_npu_ops`: kernels with a TensorFlow meaning (dropout masks, FastGelu, FusedLayerNorm); the rest raise."""
from npu_tf_profiling.bridge.npu_device.gen_ops import (
    adam_apply_one_assign,
    adam_apply_one_with_decay_assign,
    basic_lstm_cell,
    basic_lstm_cell_c_state_grad,
    basic_lstm_cell_input_grad,
    basic_lstm_cell_weight_grad,
    drop_out_do_mask,
    drop_out_do_mask_v3,
    drop_out_gen_mask,
    drop_out_gen_mask_v3,
    dynamic_gru_v2_grad,
    dynamic_rnn_grad,
    fast_gelu,
    fast_gelu_grad,
    fused_layer_norm,
    fused_layer_norm_grad,
    lamb_apply_optimizer_assign,
    lamb_apply_weight_assign,
    lars_v2,
)

__all__ = [
    "drop_out_gen_mask", "drop_out_do_mask", "drop_out_gen_mask_v3", "drop_out_do_mask_v3", "fast_gelu", "fast_gelu_grad",
    "fused_layer_norm", "fused_layer_norm_grad", "lars_v2", "lamb_apply_optimizer_assign", "lamb_apply_weight_assign",
    "adam_apply_one_assign", "adam_apply_one_with_decay_assign", "dynamic_rnn_grad", "dynamic_gru_v2_grad",
    "basic_lstm_cell", "basic_lstm_cell_c_state_grad", "basic_lstm_cell_weight_grad", "basic_lstm_cell_input_grad",
]
