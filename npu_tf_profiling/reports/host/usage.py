"""CANN's host usage CSVs, from ``host_sys.jsonl``, with CANN's file names and columns.

Sources (CANN's Profiling guide, "performance data file reference"; cited in docs/output_format.md):
``host_cpu_usage_*.csv`` (Device_id, Total Cpu Numbers, Occupied Cpu Numbers, Recommend Cpu Numbers),
``host_mem_usage_*.csv`` (Device_id, Total Memory(KB), Peak Used Memory(KB), Recommend Memory(KB)),
``host_disk_usage_*.csv`` (Device_id, Peak Disk Read(KB/s), Recommend Disk Read(KB/s), Peak Disk Write(KB/s),
Recommend Disk Write(KB/s)), ``host_network_usage_*.csv`` (Device_id, Netcard Speed(KB/s), Peak Used Speed(KB/s),
Recommend Speed(KB/s)) for ``host_sys``; ``cpu_usage_*.csv`` (Device_id, Cpu Type, User(%), Sys(%), IoWait(%),
Irq(%), Soft(%), Idle(%)) for ``host_sys_usage`` cpu. Device_id is ``host``, as CANN writes it for host rows.

CANN's "Recommend" columns are a virtual machine's suggested allocation; with no such scheduler here they
are the peak rounded up (cores) or the peak itself, so a reader sizing a machine gets a safe figure.
"""
from __future__ import annotations

import math
from pathlib import Path
from typing import Optional

import numpy as np

from npu_tf_profiling.raw_format.atomic import atomic_write_text
from npu_tf_profiling.reports.host.raw import HostSamples

HOST = "host"


def rates(samples: HostSamples, key: str) -> Optional[tuple[np.ndarray, np.ndarray]]:
    """A cumulative counter's increase per second between consecutive samples that hold it (disk and network
    are read less often than CPU): (the intervals' end times in µs, the rates, one row per interval)."""
    column = samples.columns.get(key)
    if column is None:
        return None
    present = np.isfinite(column) if column.ndim == 1 else np.isfinite(column).all(axis=1)
    t, values = samples.t_us[present], column[present]
    dt = np.diff(t) / 1e6
    keep = dt > 0
    if not keep.any():
        return None
    return t[1:][keep], (np.diff(values, axis=0)[keep].T / dt[keep]).T


def process_cores(samples: HostSamples) -> Optional[tuple[np.ndarray, np.ndarray]]:
    """Cores this process kept busy, per interval (user + system CPU seconds per second): (end times, cores)."""
    cpu = rates(samples, "cpu")
    return None if cpu is None else (cpu[0], cpu[1].sum(axis=1))


def _csv(path: Path, header: list[str], row: list[object]) -> Path:
    atomic_write_text(path, ",".join(header) + "\n" + ",".join(str(v) for v in row) + "\n")
    return path


def _peak(values: np.ndarray) -> float:
    finite = values[np.isfinite(values)]
    return float(finite.max()) if finite.size else 0.0


def write_usage_csvs(samples: HostSamples, out_dir: Path, ts: str) -> list[Path]:
    written = []
    busy = process_cores(samples)
    if busy is not None:
        cores = busy[1]
        span_s = (samples.t_us[-1] - samples.t_us[0]) / 1e6
        cpu = samples.columns["cpu"]
        mean = float(np.nansum(cpu[-1] - cpu[0])) / span_s if span_s > 0 else 0.0
        # CPU seconds tick in 10 ms steps, so one short interval can read above the machine's cores: capped.
        cpus = samples.header.get("cpus")
        recommend = math.ceil(_peak(cores))
        recommend = min(recommend, cpus) if isinstance(cpus, int) and cpus > 0 else recommend
        written.append(_csv(out_dir / f"host_cpu_usage_{ts}.csv",
                            ["Device_id", "Total Cpu Numbers", "Occupied Cpu Numbers", "Recommend Cpu Numbers"],
                            [HOST, cpus or "", f"{mean:.2f}", recommend]))
    if samples.has("mem"):
        peak_kb = int(_peak(samples.columns["mem"]))
        written.append(_csv(out_dir / f"host_mem_usage_{ts}.csv",
                            ["Device_id", "Total Memory(KB)", "Peak Used Memory(KB)", "Recommend Memory(KB)"],
                            [HOST, samples.header.get("mem_total_kb", ""), peak_kb, peak_kb]))
    disk_rates = rates(samples, "disk")
    if disk_rates is not None:
        disk = disk_rates[1]
        read, write = _peak(disk[:, 0]) / 1024, _peak(disk[:, 1]) / 1024
        written.append(_csv(out_dir / f"host_disk_usage_{ts}.csv",
                            ["Device_id", "Peak Disk Read(KB/s)", "Recommend Disk Read(KB/s)", "Peak Disk Write(KB/s)",
                             "Recommend Disk Write(KB/s)"], [HOST, f"{read:.2f}", f"{read:.2f}", f"{write:.2f}", f"{write:.2f}"]))
    net_rates = rates(samples, "net")
    if net_rates is not None:
        used = _peak(net_rates[1].sum(axis=1)) / 1024
        written.append(_csv(out_dir / f"host_network_usage_{ts}.csv",
                            ["Device_id", "Netcard Speed(KB/s)", "Peak Used Speed(KB/s)", "Recommend Speed(KB/s)"],
                            [HOST, f"{samples.header.get('netcard_kbps') or 0:.2f}", f"{used:.2f}", f"{used:.2f}"]))
    if samples.has("sys_cpu"):
        sys_cpu = samples.columns["sys_cpu"]
        finite = sys_cpu[np.isfinite(sys_cpu).all(axis=1)]
        spent = finite[-1] - finite[0]
        shares = 100.0 * spent / spent.sum() if spent.sum() > 0 else np.zeros(6)
        written.append(_csv(out_dir / f"cpu_usage_{ts}.csv",
                            ["Device_id", "Cpu Type", "User(%)", "Sys(%)", "IoWait(%)", "Irq(%)", "Soft(%)", "Idle(%)"],
                            [HOST, "Avg", *(f"{share:.2f}" for share in shares)]))
    return written
