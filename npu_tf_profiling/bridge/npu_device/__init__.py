"""The TF2 surface: what Ascend's `npu_device` adapter gives an eager/Keras script, on CPU/GPU TensorFlow.

`npu_device.open()` and its handle (which start the TF2 step trace when the
script asks for profiling), `global_options()`, `npu_device.distribute`
(all-reduce, broadcast, the Keras optimizer wrapper, dataset sharding), the
generated kernels of `gen_npu_ops` and the Keras loss-scale optimizer. How the
eager ranks join the job is `bridge/ranks/eager_collectives.py`.

Upstream's module paths (`import npu_device...`) are served by
`bridge/compat/npu_device/`, which re-exports what is here; this package is
never importable as top-level `npu_device`.
"""
