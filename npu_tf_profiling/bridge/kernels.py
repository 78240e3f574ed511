"""Ascend NPU kernels with no TensorFlow counterpart: they import, and raise `NpuOnlyOpError` when called.

A script that imports them but takes another branch runs; one that calls them
is told which op it was and what to write instead, rather than getting silently
different numbers from a guessed re-implementation.
"""
from __future__ import annotations

from npu_tf_profiling.bridge.notes import npu_only_kernel

LARS_ALTERNATIVE = ("the LARS trust ratio written with tf.norm: g * hyperpara * ||w|| / (||g|| + weight_decay * ||w|| + epsilon) "
         "plus weight_decay * w, per variable, then tf.train.MomentumOptimizer")
ADAM_ALTERNATIVE = "tf.compat.v1.train.AdamOptimizer (its fused ApplyAdam kernel does the same update)"
_REMOTE = ("a host-side tf.Variable (under tf.device('/cpu:0')) read with tf.gather / tf.nn.embedding_lookup "
           "and written with tf.compat.v1.scatter_update")
_RDMA = "a host-side tf.Variable (under tf.device('/cpu:0')) read with tf.nn.embedding_lookup; no RDMA pool is needed"

# npu_bridge.estimator.npu_ops
LARS = npu_only_kernel("npu_ops.LARS", LARS_ALTERNATIVE)
LARSV2 = npu_only_kernel("npu_ops.LARSV2", LARS_ALTERNATIVE)
basic_lstm_cell = npu_only_kernel("npu_ops.basic_lstm_cell", "tf.nn.rnn_cell.BasicLSTMCell (or tf.keras.layers.LSTMCell)")
adam_apply_one_assign = npu_only_kernel("npu_ops.adam_apply_one_assign", ADAM_ALTERNATIVE)
adam_apply_one_with_decay_assign = npu_only_kernel(
    "npu_ops.adam_apply_one_with_decay_assign", "tf.compat.v1.train.AdamOptimizer plus an explicit weight-decay term in the loss"
)

# npu_bridge.hccl.hccl_ops: remote (RDMA) memory access between hosts and devices
remote_read = npu_only_kernel("hccl_ops.remote_read", _REMOTE)
remote_ref_read = npu_only_kernel("hccl_ops.remote_ref_read", _REMOTE)
remote_write = npu_only_kernel("hccl_ops.remote_write", _REMOTE)
remote_scatter_write = npu_only_kernel("hccl_ops.remote_scatter_write", _REMOTE)

# npu_bridge.npu_cpu.npu_cpu_ops: embedding row addresses in a host table
embeddingrankid = npu_only_kernel(
    "npu_cpu_ops.embeddingrankid",
    "tf.math.floormod(ids, rank_size) for the owning rank and tf.math.floordiv(ids, rank_size) for the row (mode 'mod')",
)
embedding_local_index = npu_only_kernel("npu_cpu_ops.embedding_local_index", "tf.math.floordiv(ids, rank_size) (mode 'mod')")

# npu_bridge.estimator.npu.npu_plugin: RDMA memory pools
init_rdma_pool = npu_only_kernel("npu_plugin.init_rdma_pool", _RDMA)
rdma_remote_register = npu_only_kernel("npu_plugin.rdma_remote_register", _RDMA)
rdma_remote_init = npu_only_kernel("npu_plugin.rdma_remote_init", _RDMA)
get_var_addr_and_size = npu_only_kernel("npu_plugin.get_var_addr_and_size", _RDMA)
malloc_shared_memory = npu_only_kernel("npu_plugin.malloc_shared_memory", _RDMA)
get_rdma_cache = npu_only_kernel("npu_plugin.get_rdma_cache", _RDMA)
