"""The host sampler's counters, read 50 times a second: Linux's ``/proc`` files through kept descriptors, else psutil.

Why not psutil alone: it opens, reads, closes and parses a whole file per call, and its ``virtual_memory`` parses
all of ``/proc/meminfo``. Measured on the 2-core development machine (2026-12-06, CPU time per call,
``benchmarks/host_switches_cost.py``): a whole sample with every counter on cost 343 µs through psutil against
about 55 µs through ``/proc`` here: one ``pread`` on a descriptor opened once, and ``os.times`` for the process's CPU.
At 50 Hz that is 1.7% of a core against 0.3%, and the sampler holds the interpreter lock while it parses, so
the training thread waits on it. The figures mean exactly what psutil's mean (the same files, fields and units);
``tests/test_host_counters.py`` holds the two readers against each other. psutil stays the reader where ``/proc``
is not there (macOS), and for the one-off facts (CPU count, total memory, the cards' speed).
"""
from __future__ import annotations

import os
from typing import Protocol

import psutil

_PAGE_KB = os.sysconf("SC_PAGE_SIZE") // 1024 if hasattr(os, "sysconf") else 4
_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
# /proc/stat's first line: cpu user nice system idle iowait irq softirq ...; the order the sampler writes (host_usage)
_SYS_CPU_FIELDS = (1, 3, 5, 6, 7, 4)  # user, system, iowait, irq, softirq, idle
_MEMINFO_KEYS = (b"MemTotal:", b"MemFree:", b"MemAvailable:")


class HostCounters(Protocol):
    """Cumulative or current counters, in the units ``raw_format.host_usage`` stores."""

    def process_cpu_s(self) -> list[float]: ...  # user, system

    def process_rss_kb(self) -> int: ...

    def process_io_bytes(self) -> list[int]: ...  # read, written (storage, not the page cache)

    def net_bytes(self) -> list[int]: ...  # received, sent: every interface but loopback

    def system_cpu_s(self) -> list[float]: ...  # user, system, iowait, irq, softirq, idle

    def system_memory_kb(self) -> list[int]: ...  # total, used (psutil's meaning: total - available)

    def close(self) -> None: ...


def _kb(buffer: bytes, key: bytes) -> int:
    start = buffer.find(key)
    if start < 0:
        return -1
    return int(buffer[start + len(key):buffer.index(b"\n", start)].split()[0])


class ProcCounters:
    """Linux: each file opened once, read with one ``pread`` a sample."""

    def __init__(self) -> None:
        self._statm = os.open("/proc/self/statm", os.O_RDONLY)
        self._io = os.open("/proc/self/io", os.O_RDONLY)
        self._net = os.open("/proc/net/dev", os.O_RDONLY)
        self._stat = os.open("/proc/stat", os.O_RDONLY)
        self._meminfo = os.open("/proc/meminfo", os.O_RDONLY)

    def process_cpu_s(self) -> list[float]:
        times = os.times()
        return [times.user, times.system]

    def process_rss_kb(self) -> int:
        return int(os.pread(self._statm, 128, 0).split()[1]) * _PAGE_KB

    def process_io_bytes(self) -> list[int]:
        fields = dict(line.split(b": ") for line in os.pread(self._io, 512, 0).splitlines())
        return [int(fields[b"read_bytes"]), int(fields[b"write_bytes"])]

    def net_bytes(self) -> list[int]:
        received = sent = 0
        for line in os.pread(self._net, 1 << 16, 0).splitlines()[2:]:
            name, _, counts = line.partition(b":")
            if counts and name.strip() != b"lo":
                fields = counts.split()
                received += int(fields[0])
                sent += int(fields[8])
        return [received, sent]

    def system_cpu_s(self) -> list[float]:
        fields = os.pread(self._stat, 512, 0).split(b"\n", 1)[0].split()
        return [int(fields[i]) / _TICKS for i in _SYS_CPU_FIELDS]

    def system_memory_kb(self) -> list[int]:
        info = os.pread(self._meminfo, 1 << 13, 0)
        total, free, available = (_kb(info, key) for key in _MEMINFO_KEYS)
        # psutil's rule: a container's MemAvailable over the total (or an old kernel's none) reads as the free memory
        return [total, total - (available if 0 <= available <= total else free)]

    def close(self) -> None:
        for fd in (self._statm, self._io, self._net, self._stat, self._meminfo):
            os.close(fd)


class PsutilCounters:
    """Elsewhere: psutil's calls, the same figures."""

    def __init__(self) -> None:
        self._process = psutil.Process()

    def process_cpu_s(self) -> list[float]:
        times = self._process.cpu_times()
        return [times.user, times.system]

    def process_rss_kb(self) -> int:
        return self._process.memory_info().rss // 1024

    def process_io_bytes(self) -> list[int]:
        io = self._process.io_counters()
        return [io.read_bytes, io.write_bytes]

    def net_bytes(self) -> list[int]:
        cards = psutil.net_io_counters(pernic=True)
        return [sum(c.bytes_recv for name, c in cards.items() if name != "lo"),
                sum(c.bytes_sent for name, c in cards.items() if name != "lo")]

    def system_cpu_s(self) -> list[float]:
        times = psutil.cpu_times()
        return [times.user, times.system, getattr(times, "iowait", 0.0), getattr(times, "irq", 0.0),
                getattr(times, "softirq", 0.0), times.idle]

    def system_memory_kb(self) -> list[int]:
        memory = psutil.virtual_memory()
        return [memory.total // 1024, memory.used // 1024]

    def close(self) -> None:
        """Nothing held."""


def host_counters() -> HostCounters:
    """``/proc`` where it can be opened, else psutil."""
    try:
        return ProcCounters()
    except OSError:
        return PsutilCounters()
