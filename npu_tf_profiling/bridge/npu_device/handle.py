"""`npu_device.open()`, its handle's `as_default()`, `global_npu_ctx()` and `compat.enable_v1()` on CPU/GPU.

Upstream, `open()` starts the NPU with `global_options()` (profiling included)
and `as_default()` makes the NPU the default device and patches `tf.function`
for its graph engine. On CPU/GPU there is no device to open and TensorFlow's
own placement is already right, so the handle only keeps what scripts read back
(`workers_num`, `worker_id`, `name()`, `scope()`), and `open()` does the one
thing that matters here: it starts the TF2 step trace when
`profiling_config.enable_profiling` is set, with `profiling_options` (checked
then: a bad JSON raises at `open()`), exactly when upstream would start
collecting, and with `RANK_SIZE` > 1 it joins the ranks (`ranks.eager_collectives`). With `enable_profiling` off nothing is started, so PROFILING_MODE /
PROFILING_OPTIONS (read when the first step is traced) apply as upstream. NPU-only
options the script set are reported once, at the `open()` line, as accepted with
no effect. `tf.function` is not patched: TensorFlow's own tracing is what runs.
"""
from __future__ import annotations

import contextlib
import os
import threading
from dataclasses import dataclass

from npu_tf_profiling.bridge.npu_device.options import global_options
from npu_tf_profiling.bridge.notes import note_once
from npu_tf_profiling.bridge.ranks.eager_collectives import join
from npu_tf_profiling.bridge.ranks.discovery import rank_setup

NPU = "/job:localhost/replica:0/task:0/device:NPU"


@dataclass
class NpuDeviceHandle:
    """What `npu_device.open()` returns: the device id and this process's place among the ranks."""

    device_id: int
    workers_num: int
    worker_id: int

    def name(self) -> str:
        """Upstream's device name (NPU:<id>); no such TensorFlow device exists here."""
        return f"{NPU}:{self.device_id}"

    def scope(self) -> contextlib.AbstractContextManager[None]:
        """Upstream places ops on the NPU inside it; here TensorFlow's placement stands (a null context)."""
        return contextlib.nullcontext()

    def is_cluster_worker(self) -> bool:
        return self.workers_num > 1 and self.workers_num > self.worker_id >= 0

    def as_default(self) -> NpuDeviceHandle:
        """Make this handle the one `global_npu_ctx()` returns (upstream also makes the NPU the default device)."""
        global _global_npu_ctx
        _global_npu_ctx = self
        return self


_lock = threading.Lock()
_handles: dict[int, NpuDeviceHandle] = {}
_global_npu_ctx: NpuDeviceHandle | None = None


def open(device_id: int | None = None) -> NpuDeviceHandle:
    """Upstream's `npu_device.open`: one handle per process; starts profiling as `global_options()` asks."""
    if device_id is None:
        device_id = _device_id_from_env()
    with _lock:
        if device_id in _handles:
            return _handles[device_id]
        if _handles:
            raise RuntimeError(f"Failed create npu instance on device {device_id} as existed instance on {list(_handles)}")
        setup = rank_setup()
        handle = NpuDeviceHandle(device_id, setup.rank_size if setup.multi_rank else 1, setup.rank_id if setup.multi_rank else 0)
        if setup.multi_rank:  # upstream joins the HCCL job here; its collectives need it (`ranks.eager_collectives`)
            join(setup)
        _start_profiling_if_asked()
        _handles[device_id] = handle
        return handle


def global_npu_ctx() -> NpuDeviceHandle | None:
    """The handle `as_default()` was last called on, or None (upstream's `npu_device.npu_device.global_npu_ctx`)."""
    return _global_npu_ctx


def enable_v1() -> None:
    """Upstream's `npu_device.compat.enable_v1`: TensorFlow 1.x graph behaviour for Session/Estimator scripts."""
    import tensorflow as tf

    tf.compat.v1.disable_v2_behavior()


def _device_id_from_env() -> int:
    text = os.environ.get("ASCEND_DEVICE_ID", "0").strip() or "0"
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"ASCEND_DEVICE_ID={text!r}: expected a device number such as 0") from None


def _start_profiling_if_asked() -> None:
    options = global_options()
    npu_only = options.npu_only_settings()
    if npu_only:
        note_once("npu_device.global_options()", f"{', '.join(name.rsplit(').', 1)[-1] for name in npu_only)}: "
                  "accepted, no effect on CPU/GPU (NPU compiler, dump and device settings)")
    config = options.profiling_config
    if config.enable_profiling:
        from npu_tf_profiling.runtime.functions.attach import start_tf2_profiling

        start_tf2_profiling(config.profiling_options, enable_profiling=True)

