"""The bridge room: the npu_bridge-compatible surface that Ascend scripts call.

Ascend scripts import ``NPURunConfig``, ``NPUEstimator``, the ``npu_init`` helpers
and many more names from ``npu_bridge`` (and ``npu_device`` in TensorFlow 2).
This room gives them their CPU/GPU meaning on plain TensorFlow. It may import
TensorFlow and ``config``; the ``config`` room itself stays TensorFlow-free, so
offline reports and the CLI never pay for TensorFlow.

Its sub-rooms, by what they serve:

* ``npu_bridge/``: the TF1 surface (Estimator, session config, optimizers, loss scaling, ops);
* ``npu_device/``: the TF2 surface (``open()``, ``global_options()``, ``distribute``);
* ``ranks/``: several ranks as one job (rank discovery, sessions joining, collectives);
* ``launch/``: ``npu-tf-prof run`` and the module paths it serves (``--tf1``, contrib, Keras);
* ``compat/``: upstream's module paths (``npu_bridge...``, ``npu_device...``, ``hccl...``),
  re-exporting the above; ``alias.py`` puts it on ``sys.path``.

``notes.py`` (the accepted-no-op notes and ``NpuOnlyOpError``) and ``kernels.py``
(NPU kernels with no TensorFlow counterpart) serve every sub-room.
"""
