"""The host-side collection of one PROF folder: what ``with_stack``, ``gc_detect_threshold``, ``host_sys``,
``host_sys_usage``, ``profile_memory`` and ``msproftx`` ask for, started with the folder and stopped with it.

``ProfilingRun`` owns one ``HostCollection``; it flushes it before building reports and closes it at the
end. Each part is off unless asked for, so a run without these options starts no thread and opens no file.
The stack sampler (``stacks``) and the psutil sampler (``sampler``) stay two threads: see ``stacks``.
"""
from __future__ import annotations

import threading
import warnings
from pathlib import Path
from typing import Callable, Optional

from npu_tf_profiling import mstx
from npu_tf_profiling.config import ProfilingOptions
from npu_tf_profiling.raw_format import layout
from npu_tf_profiling.raw_format.append_writer import AppendOnlyWriter, StorageBudget
from npu_tf_profiling.raw_format.mstx_markers import encode_marker
from npu_tf_profiling.runtime.host.stacks import StackRecorder

# CANN's default host_sys_usage_freq is 50 Hz; see DEFAULT_FREQ_HZ's measurement in benchmarks/RESULTS.md.
DEFAULT_FREQ_HZ = 50
MSTX_FLUSH_S = 1.0
_NOT_SAMPLED = {"osrt": "host_sys 'osrt' (syscalls and pthread calls, which CANN takes with perf and ltrace) "
                        "is accepted, not collected: the other host_sys items are"}

_mstx_owner: Optional["HostCollection"] = None  # the folder the markers go to (the newest that asked for them)
_mstx_lock = threading.Lock()


def _items(value: Optional[str]) -> frozenset[str]:
    return frozenset(value.split(",")) if value else frozenset()


def _gpu_peak_reader(device_kind: str) -> Optional[Callable[[], Optional[int]]]:
    """TensorFlow's allocator peak of GPU:0 since the previous read (reset each time); None without a GPU."""
    if device_kind != "GPU":
        return None
    import tensorflow as tf

    def read() -> Optional[int]:
        peak = tf.config.experimental.get_memory_info("GPU:0")["peak"]
        tf.config.experimental.reset_memory_stats("GPU:0")
        return int(peak)

    return read


class HostCollection:
    def __init__(self, options: ProfilingOptions, prof_dir: Path, device_id: int, budget: StorageBudget,
                 device_kind: str, add_note: Callable[[str], None]) -> None:
        self._stacks: Optional[StackRecorder] = None
        self._sampler: Optional[HostSampler] = None
        self._mstx: Optional[AppendOnlyWriter] = None
        self._mstx_thread: Optional[threading.Thread] = None
        self._stopping = threading.Event()
        if options.with_stack or options.gc_detect_threshold is not None:
            try:
                self._stacks = StackRecorder(prof_dir, device_id, budget, bool(options.with_stack), options.gc_detect_threshold)
                self._stacks.start()
            except Exception as exc:  # noqa: BLE001 - profiling must never hurt the job
                self._stacks = None
                add_note(f"with_stack / gc_detect_threshold: not recorded ({exc!r})")
        host_sys = _items(options.host_sys)
        for item in sorted(host_sys & set(_NOT_SAMPLED)):
            add_note(_NOT_SAMPLED[item])
        sampled = host_sys - set(_NOT_SAMPLED)
        usage = _items(options.host_sys_usage)
        peaks = options.profile_memory is True
        if peaks:
            from npu_tf_profiling.runtime.host.sampler import host_peak_supported

            why_not = host_peak_supported()
            if why_not:
                add_note(f"profile_memory: no host peaks, {why_not}")
                peaks = False
        if sampled or usage or peaks:
            try:
                from npu_tf_profiling.runtime.host.sampler import HostSampler  # psutil: imported when asked for

                writer = AppendOnlyWriter(layout.host_sys_path(prof_dir, device_id), budget)
                self._sampler = HostSampler(writer, options.host_sys_usage_freq or DEFAULT_FREQ_HZ, sampled, usage,
                                            peaks, _gpu_peak_reader(device_kind) if peaks else None)
            except Exception as exc:  # noqa: BLE001 - profiling must never hurt the job
                add_note(f"host_sys / profile_memory: host sampling could not start ({exc!r})")
        if options.is_on("msproftx"):
            self._mstx = AppendOnlyWriter(layout.mstx_path(prof_dir, device_id), budget)
            global _mstx_owner
            with _mstx_lock:
                if _mstx_owner is not None:
                    _mstx_owner.flush()
                _mstx_owner = self
            mstx.enable_recording(*options.mstx_domains())
            self._mstx_thread = threading.Thread(target=self._flush_markers_every_second, daemon=True,
                                                 name="npu_tf_profiling mstx writer")
            self._mstx_thread.start()

    def _flush_markers_every_second(self) -> None:
        """A marker costs an append in memory; this thread writes them out about once a second."""
        while not self._stopping.wait(MSTX_FLUSH_S):
            try:
                self.flush()
            except Exception as exc:  # noqa: BLE001 - profiling must never hurt the job
                warnings.warn(f"npu_tf_profiling: mstx markers not written ({exc!r})", RuntimeWarning, stacklevel=1)
                return

    def flush(self) -> None:
        """Write what is still in memory (before reports are built)."""
        if self._stacks is not None:
            self._stacks.flush()
        if self._sampler is not None:
            self._sampler.flush()
        if self._mstx is not None and _mstx_owner is self:
            records = mstx.drain_records()
            if records:
                self._mstx.append(b"".join(encode_marker(*record) for record in records))

    def close(self) -> None:
        global _mstx_owner
        self._stopping.set()
        if self._mstx_thread is not None:
            self._mstx_thread.join(timeout=5.0)
        if self._stacks is not None:
            self._stacks.stop()
        if self._sampler is not None:
            self._sampler.stop()
        self.flush()
        with _mstx_lock:
            if _mstx_owner is self:
                mstx.disable_recording()
                _mstx_owner = None
        if self._mstx is not None:
            self._mstx.close()

