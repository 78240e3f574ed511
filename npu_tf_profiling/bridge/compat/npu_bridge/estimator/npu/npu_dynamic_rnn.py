"""`npu_bridge.estimator.npu.npu_dynamic_rnn`: DynamicRNN and DynamicGRUV2 built from TensorFlow ops."""
from npu_tf_profiling.bridge.npu_bridge.dynamic_rnn import DYNAMIC_RNN_BIDIRECTION, DYNAMIC_RNN_UNIDIRECTION, DynamicGRUV2, DynamicRNN

__all__ = ["DynamicRNN", "DynamicGRUV2", "DYNAMIC_RNN_UNIDIRECTION", "DYNAMIC_RNN_BIDIRECTION"]
