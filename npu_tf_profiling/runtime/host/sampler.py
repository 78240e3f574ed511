"""The host sampler thread: ``host_sys`` / ``host_sys_usage`` counters and ``profile_memory`` peaks.

One daemon thread wakes ``freq_hz`` times a second and reads only what was asked for, through
psutil (a well-kept library that knows each platform's files) rather than our own parsing:
cumulative counters (CPU seconds, I/O bytes), so the reports can compute any rate afterwards and
a lost sample only widens one interval.

``profile_memory``'s host peak is Linux's resettable high-water mark: each sample reads ``VmHWM``
and writes ``5`` to ``/proc/self/clear_refs``, which resets it, so ``hwm_kb`` is the true peak RSS
since the previous sample (a sampled RSS misses a tensor that lives for less than a period). psutil
has no call for it. On a GPU, TensorFlow's allocator peak is read and reset the same way.

Samples are kept in memory and appended about once a second (and at each report and at close):
a write per sample would cost a syscall 50 times a second; a kill loses at most that last second.
A failure inside the thread is one warning and the end of sampling; training goes on.
"""
from __future__ import annotations

import json
import threading
import time
import warnings
from pathlib import Path
from typing import Any, Callable, Optional

import psutil

from npu_tf_profiling.raw_format.append_writer import AppendOnlyWriter

FLUSH_EVERY_S = 1.0
# CANN's host_sys_usage_freq is the rate of CPU and memory; disk and network rates are read at most this often
# (psutil's read of /proc/net/dev costs ~100 µs, a third of a whole sample, for a rate no finer grain would help).
SLOW_COUNTERS_HZ = 10
_STATUS = Path("/proc/self/status")
_CLEAR_REFS = Path("/proc/self/clear_refs")


def _netcard_kbps() -> float:
    """The rated speed of the machine's network cards that are up (not loopback), KB/s (psutil gives Mbit/s)."""
    try:
        stats = psutil.net_if_stats()
    except OSError:
        return 0.0
    return sum(s.speed for name, s in stats.items() if s.isup and name != "lo" and s.speed > 0) * 1000 / 8


def _read_hwm_kb() -> int:
    with open(_STATUS, "rb") as status:
        for line in status:
            if line.startswith(b"VmHWM:"):
                return int(line.split()[1])
    raise OSError("no VmHWM in /proc/self/status")


def _reset_hwm() -> None:
    with open(_CLEAR_REFS, "w") as refs:
        refs.write("5")


def host_peak_supported() -> Optional[str]:
    """None when the resettable high-water mark works here, else why not (then profile_memory says so)."""
    try:
        _reset_hwm()
        _read_hwm_kb()
    except (OSError, ValueError) as exc:
        return f"the peak RSS cannot be reset here ({exc})"
    return None


class HostSampler:
    """The sampling thread of one PROF folder; ``flush`` and ``stop`` are called by the runtime."""

    def __init__(self, writer: AppendOnlyWriter, freq_hz: int, host_sys: frozenset[str], host_sys_usage: frozenset[str],
                 memory_peaks: bool, gpu_peak: Optional[Callable[[], Optional[int]]]) -> None:
        self._writer = writer
        self._period = 1.0 / freq_hz
        self._host_sys = host_sys
        self._usage = host_sys_usage
        self._peaks = memory_peaks
        self._gpu_peak = gpu_peak
        self._process = psutil.Process()
        self._slow_every = max(1, round(freq_hz / SLOW_COUNTERS_HZ))
        self._tick = 0
        self._pending: list[bytes] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        header = {"cpus": psutil.cpu_count() or 1, "netcard_kbps": _netcard_kbps() if "network" in host_sys else None,
                  "freq_hz": freq_hz,
                  "mem_total_kb": psutil.virtual_memory().total // 1024}
        self._pending.append(json.dumps({"header": header}).encode() + b"\n")
        if memory_peaks:
            _reset_hwm()
        self._thread = threading.Thread(target=self._run, name="npu_tf_profiling host sampler", daemon=True)
        self._thread.start()

    def sample(self) -> dict[str, Any]:
        """One sample: the counters asked for, now."""
        row: dict[str, Any] = {"t_us": round(time.time() * 1e6, 1)}
        slow = self._tick % self._slow_every == 0
        self._tick += 1
        if "cpu" in self._host_sys:
            times = self._process.cpu_times()
            row["cpu"] = [times.user, times.system]
        if "mem" in self._host_sys:
            row["mem"] = self._process.memory_info().rss // 1024
        if slow and "disk" in self._host_sys:
            io = self._process.io_counters()
            row["disk"] = [io.read_bytes, io.write_bytes]
        if slow and "network" in self._host_sys:
            net = psutil.net_io_counters()
            row["net"] = [net.bytes_recv, net.bytes_sent]
        if "cpu" in self._usage:
            sys_times = psutil.cpu_times()
            row["sys_cpu"] = [sys_times.user, sys_times.system, getattr(sys_times, "iowait", 0.0),
                              getattr(sys_times, "irq", 0.0), getattr(sys_times, "softirq", 0.0), sys_times.idle]
        if "mem" in self._usage:
            memory = psutil.virtual_memory()
            row["sys_mem"] = [memory.total // 1024, memory.used // 1024]
        if self._peaks:
            row["hwm_kb"] = _read_hwm_kb()
            _reset_hwm()
            if self._gpu_peak is not None:
                row["dev_peak"] = self._gpu_peak()
        return row

    def _run(self) -> None:
        due = time.monotonic()
        next_flush = due + FLUSH_EVERY_S
        try:
            while not self._stop.is_set():
                line = json.dumps(self.sample(), separators=(",", ":")).encode() + b"\n"
                with self._lock:
                    self._pending.append(line)
                due += self._period
                now = time.monotonic()
                if now >= next_flush:
                    self.flush()
                    next_flush = now + FLUSH_EVERY_S
                if due < now:  # a stall (a loaded machine, a long GC): skip the missed ticks rather than burst
                    due = now + self._period
                self._stop.wait(due - now if due > now else 0)
        except Exception as exc:  # noqa: BLE001 - profiling must never hurt the job
            warnings.warn(f"npu_tf_profiling: host sampling stopped ({exc!r}); training goes on", RuntimeWarning, stacklevel=1)
        self.flush()

    def flush(self) -> None:
        with self._lock:
            lines, self._pending = self._pending, []
        if lines:
            self._writer.append(b"".join(lines))

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5.0)
        self.flush()
        self._writer.close()
