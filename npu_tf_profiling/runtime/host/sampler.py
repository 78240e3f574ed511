"""The host sampler thread: ``host_sys`` / ``host_sys_usage`` counters and ``profile_memory`` peaks.

One daemon thread wakes ``freq_hz`` times a second and reads only what was asked for (``counters``:
Linux's ``/proc`` through kept descriptors, a sixth of psutil's cost, else psutil): cumulative counters
(CPU seconds, I/O bytes), so the reports can compute any rate afterwards and a lost sample only widens
one interval.

``profile_memory``'s host peak is Linux's resettable high-water mark: each sample reads ``VmHWM``
and writes ``5`` to ``/proc/self/clear_refs``, which resets it, so ``hwm_kb`` is the true peak RSS
since the previous sample (a sampled RSS misses a tensor that lives for less than a period). psutil
has no call for it. On a GPU, TensorFlow's allocator peak is read and reset the same way.

Samples are kept in memory, and encoded and appended about once a second (and at each report and at
close): a write per sample would cost a syscall 50 times a second; a kill loses at most that last second.
A failure inside the thread is one warning and the end of sampling; training goes on.
"""
from __future__ import annotations

import os
import threading
import time
import warnings
from pathlib import Path
from typing import Any, Callable, Optional

import psutil

from npu_tf_profiling.raw_format.append_writer import AppendOnlyWriter
from npu_tf_profiling.raw_format.host_usage import encode_header, encode_sample
from npu_tf_profiling.runtime.host.counters import host_counters

FLUSH_EVERY_S = 1.0
# CANN's host_sys_usage_freq is the rate of CPU and memory; disk and network rates are read at most this often
# (the read of /proc/net/dev, every card's line parsed, costs ~14 µs, a quarter of a whole sample, for a rate no finer
# grain would help).
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


class PeakRss:
    """The resettable high-water mark: ``/proc/self/status``'s VmHWM, reset by writing 5 to ``clear_refs``."""

    def __init__(self) -> None:
        self._status = os.open(_STATUS, os.O_RDONLY)
        try:
            self._clear_refs = os.open(_CLEAR_REFS, os.O_WRONLY)
        except OSError:
            os.close(self._status)
            raise
        os.pwrite(self._clear_refs, b"5", 0)

    def read_and_reset_kb(self) -> int:
        """The peak RSS since the last call (since this object's making, the first time)."""
        status = os.pread(self._status, 1 << 13, 0)
        start = status.find(b"VmHWM:")
        if start < 0:
            raise OSError("no VmHWM in /proc/self/status")
        os.pwrite(self._clear_refs, b"5", 0)
        return int(status[start + 6:status.index(b"\n", start)].split()[0])

    def close(self) -> None:
        os.close(self._status)
        os.close(self._clear_refs)


def host_peak_supported() -> Optional[str]:
    """None when the resettable high-water mark works here, else why not (then profile_memory says so)."""
    try:
        peak = PeakRss()
        try:
            peak.read_and_reset_kb()
        finally:
            peak.close()
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
        self._gpu_peak = gpu_peak
        self._counters = host_counters()
        self._peak_rss = PeakRss() if memory_peaks else None  # made (and so reset) before the thread starts
        self._slow_every = max(1, round(freq_hz / SLOW_COUNTERS_HZ))
        self._tick = 0
        self._pending: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        header = {"cpus": psutil.cpu_count() or 1, "netcard_kbps": _netcard_kbps() if "network" in host_sys else None,
                  "freq_hz": freq_hz,
                  "mem_total_kb": psutil.virtual_memory().total // 1024}
        self._header = encode_header(header)  # written by the first flush, before its rows
        self._thread = threading.Thread(target=self._run, name="npu_tf_profiling host sampler", daemon=True)
        self._thread.start()

    def sample(self) -> dict[str, Any]:
        """One sample: the counters asked for, now."""
        row: dict[str, Any] = {"t_us": time.time() * 1e6}
        slow = self._tick % self._slow_every == 0
        self._tick += 1
        counters = self._counters
        if "cpu" in self._host_sys:
            row["cpu"] = counters.process_cpu_s()
        if "mem" in self._host_sys:
            row["mem"] = counters.process_rss_kb()
        if slow and "disk" in self._host_sys:
            row["disk"] = counters.process_io_bytes()
        if slow and "network" in self._host_sys:
            row["net"] = counters.net_bytes()
        if "cpu" in self._usage:
            row["sys_cpu"] = counters.system_cpu_s()
        if "mem" in self._usage:
            row["sys_mem"] = counters.system_memory_kb()
        if self._peak_rss is not None:
            row["hwm_kb"] = self._peak_rss.read_and_reset_kb()
            if self._gpu_peak is not None:
                row["dev_peak"] = self._gpu_peak()
        return row

    def _run(self) -> None:
        due = time.monotonic()
        next_flush = due + FLUSH_EVERY_S
        try:
            while not self._stop.is_set():
                row = self.sample()
                with self._lock:
                    self._pending.append(row)
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
        """Encode and append the samples taken since the last flush: encoding a second's rows in one loop costs a
        third of encoding each as it is taken (18 against 50 µs a row, measured here: a loop that runs once every
        20 ms starts cold each time)."""
        with self._lock:
            rows, self._pending = self._pending, []
            header, self._header = self._header, b""
        if rows or header:
            self._writer.append(header + b"".join(encode_sample(row.pop("t_us"), row) for row in rows))

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5.0)
        self.flush()
        self._writer.close()
        if not self._thread.is_alive():  # else the thread may still read them; the process's exit closes them
            self._counters.close()
            if self._peak_rss is not None:
                self._peak_rss.close()
