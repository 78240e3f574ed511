"""`npu_strategy.NPUStrategy`: upstream's one-device distribution strategy, on the local CPU or GPU.

Upstream defaults to device "/cpu:0" because the NPU graph is handed over by
the host; here that would keep a GPU idle, so without an explicit `device` the
strategy uses the first GPU when there is one, else the CPU. An explicit device
is used as given. One replica per process, as upstream in a single process.
"""
from __future__ import annotations

import tensorflow as tf


def _default_device() -> str:
    return "/gpu:0" if tf.config.list_physical_devices("GPU") else "/cpu:0"


class NPUStrategy(tf.compat.v1.distribute.OneDeviceStrategy):
    """`tf.compat.v1.distribute.OneDeviceStrategy` on `device` (default: first GPU, else CPU)."""

    def __init__(self, device: str | None = None) -> None:
        super().__init__(device or _default_device())
