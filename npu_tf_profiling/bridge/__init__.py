"""The bridge room: the npu_bridge-compatible surface that Ascend scripts call.

Ascend scripts import ``NPURunConfig``, ``NPUEstimator``, the ``npu_init`` helpers
and many more names from ``npu_bridge``. This room gives them their CPU/GPU
meaning on plain TensorFlow. It may import TensorFlow and ``config``; the
``config`` room itself stays TensorFlow-free, so offline reports and the CLI
never pay for TensorFlow.
"""
