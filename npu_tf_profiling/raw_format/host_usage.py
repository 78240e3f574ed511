"""``host_sys.csv``: the host usage sampler's rows, one line of numbers each (``layout`` documents the file).

Why not a JSON line per sample like the other raw files: at 50 Hz a long run has millions of samples, and
``json.loads`` costs ~5-20 µs a line, so reading three hours of samples took ~16 s of CPU each time the
reports were rebuilt; a C CSV parser reads the same in well under a second. The first line is a JSON
header; each later line holds ``COLUMNS`` in order, an empty field where the sample did not read that
counter (not asked for, or read at a lower rate). Samples are appended in whole batches ending in a
newline, so only a kill mid-write leaves a torn last line, which readers drop.
"""
from __future__ import annotations

import json
from typing import Any, Mapping, Optional

# Counters by group: the sampler fills a group's columns together, and the reports read them together.
GROUPS: dict[str, tuple[str, ...]] = {
    "cpu": ("cpu_user_s", "cpu_system_s"),
    "mem": ("rss_kb",),
    "disk": ("disk_read_bytes", "disk_write_bytes"),
    "net": ("net_recv_bytes", "net_sent_bytes"),
    "sys_cpu": ("sys_user_s", "sys_system_s", "sys_iowait_s", "sys_irq_s", "sys_softirq_s", "sys_idle_s"),
    "sys_mem": ("sys_total_kb", "sys_used_kb"),
    "hwm_kb": ("hwm_kb",),
    "dev_peak": ("device_peak_bytes",),
}
COLUMNS: tuple[str, ...] = ("t_us",) + tuple(name for names in GROUPS.values() for name in names)


def encode_header(header: Mapping[str, Any]) -> bytes:
    return json.dumps({"header": dict(header), "columns": list(COLUMNS)}).encode() + b"\n"


def encode_sample(t_us: float, groups: Mapping[str, Any]) -> bytes:
    """One line: ``groups`` maps a group name to its value (one number) or values (a list, in its order)."""
    fields = [f"{t_us:.1f}"]
    for group, names in GROUPS.items():
        value = groups.get(group)
        values = [None] * len(names) if value is None else (value if isinstance(value, (list, tuple)) else [value])
        fields.extend("" if v is None else repr(v) for v in values)
    return ",".join(fields).encode() + b"\n"


def decode_header(line: bytes) -> Optional[dict[str, Any]]:
    try:
        value = json.loads(line)
    except ValueError:
        return None
    return value if isinstance(value, dict) and isinstance(value.get("header"), dict) else None
