"""The TF1 surface: what Ascend's `npu_bridge` adapter gives a graph-mode script, on CPU/GPU TensorFlow.

`NPURunConfig`/`NPUEstimator` (and the ConfigProto entry that carries the
profiling request), session hooks, optimizer wrappers and loss scaling, the
fused-kernel layers and ops that have an exact TensorFlow meaning
(`DynamicRNN`, dropout, gelu), `set_iteration_per_loop`, and the NPU-only
scopes, config records and system start/stop, accepted as noted no-ops.

Not to be confused with `bridge/compat/npu_bridge/`, the tree of upstream's
module paths that `import npu_bridge...` resolves to: that tree only
re-exports names implemented here (and in the sibling rooms), and this
package is never importable as top-level `npu_bridge` (only the `compat`
folder is put on `sys.path`).
"""
