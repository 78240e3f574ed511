"""``info.json``, typed: what a device folder's run was (options, source, rank, host, models, notes...).

The runtime writes it while the job runs and the reports read it, often on
another machine and from another version of the package, so both go through
this one dataclass. Writing is ``to_json``; reading is ``from_json``, which
never fails: info.json is a helper for the reports, not a precondition (a
folder from an older version, or a field another process damaged, still gets
its reports), so a field of the wrong type reads as absent. ``version`` says
which shape wrote it: 1 is every info.json before the key existed.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Mapping

from npu_tf_profiling.raw_format.layout import K_CLOSED, K_OTHER_RUNS, K_OTHER_RUNS_RECORDED

RUN_INFO_VERSION = 2
_UNVERSIONED = 1


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _time(value: Any) -> float | None:
    """A finite number (older versions wrote a float)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value or value in (float("inf"), float("-inf")):
        return None
    return value


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


MIN_CPU_SPAN_US = 1e6  # a shorter span says little about the steady iterations (the first batch comes ~0.5 s in)
_CPU_KEYS = ("first_us", "first_cpu_s", "last_us", "last_cpu_s", "cores")


def _process_cpu(value: Any) -> dict[str, Any] | None:
    if not isinstance(value, Mapping) or any(_time(value.get(k)) is None for k in _CPU_KEYS) or _time(value["cores"]) < 1:
        return None
    return {k: value[k] for k in _CPU_KEYS}


def _dict(value: Any) -> dict[str, Any]:
    return dict(value) if isinstance(value, Mapping) else {}


@dataclass(frozen=True)
class RunInfo:
    """One device folder's info.json (docs/output_format.md, "info.json"). Absent or unreadable fields are None/empty."""

    options: dict[str, Any] = field(default_factory=dict)  # the resolved profiling options, as ProfilingOptions.to_dict
    source: str | None = None  # which request won: "env", "session_config", "dynamic", ...
    output_dir: str | None = None
    not_collected: dict[str, str] = field(default_factory=dict)
    device_id: int | None = None
    device_kind: str | None = None  # "CPU" or "GPU"
    rank_id: int | None = None
    rank_size: int | None = None
    pid: int | None = None
    host: str | None = None
    python_version: str | None = None
    tensorflow_version: str | None = None
    start_time_us: float | None = None  # when the folder was started (epoch µs)
    models: dict[str, Any] = field(default_factory=dict)  # model id (a string) -> its trace points
    notes: list[str] = field(default_factory=list)
    other_runs_recorded: bool = False  # the runs between iterations are in other_runs.jsonl
    other_runs: dict[str, Any] = field(default_factory=dict)  # kind -> {"count": n, "time_us": t}
    env_ignored: dict[str, Any] | None = None  # {"variables": {...}, "reason": ...} when a request beat the env vars
    closed_us: float | None = None  # when the job closed the folder (absent while it runs, or if it was killed)
    # The process's CPU while iterations were recorded: {"first_us", "first_cpu_s", "last_us", "last_cpu_s", "cores"}
    # (epoch µs and process CPU seconds at the first and latest batch of training records; the cores it may use).
    process_cpu: dict[str, Any] | None = None
    version: int = RUN_INFO_VERSION

    def to_json(self) -> dict[str, Any]:
        """The JSON object info.json holds (`env_ignored` and `closed_us` only when set)."""
        data = dataclasses.asdict(self)
        for key in ("env_ignored", K_CLOSED, "process_cpu"):
            if data[key] is None:
                del data[key]
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any] | None) -> "RunInfo":
        """The info a JSON object holds; {} or None (a missing or unreadable file) is an info with nothing known."""
        data = data if isinstance(data, Mapping) else {}
        notes = data.get("notes")
        env_ignored = data.get("env_ignored")
        return cls(
            options=_dict(data.get("options")),
            source=_str(data.get("source")),
            output_dir=_str(data.get("output_dir")),
            not_collected=_dict(data.get("not_collected")),
            device_id=_int(data.get("device_id")),
            device_kind=_str(data.get("device_kind")),
            rank_id=_int(data.get("rank_id")),
            rank_size=_int(data.get("rank_size")),
            pid=_int(data.get("pid")),
            host=_str(data.get("host")),
            python_version=_str(data.get("python_version")),
            tensorflow_version=_str(data.get("tensorflow_version")),
            start_time_us=_time(data.get("start_time_us")),
            models=_dict(data.get("models")),
            notes=[n for n in notes if isinstance(n, str)] if isinstance(notes, list) else [],
            other_runs_recorded=bool(data.get(K_OTHER_RUNS_RECORDED)),
            other_runs=_dict(data.get(K_OTHER_RUNS)),
            env_ignored=dict(env_ignored) if isinstance(env_ignored, Mapping) else None,
            closed_us=_time(data.get(K_CLOSED)),
            process_cpu=_process_cpu(data.get("process_cpu")),
            version=_int(data.get("version")) or _UNVERSIONED,
        )

    def busy_cores(self) -> tuple[float, int] | None:
        """(the cores the process kept busy on average while iterations were recorded, the cores it may use)."""
        cpu = self.process_cpu
        if cpu is None or cpu["last_us"] - cpu["first_us"] < MIN_CPU_SPAN_US:
            return None
        return (cpu["last_cpu_s"] - cpu["first_cpu_s"]) / ((cpu["last_us"] - cpu["first_us"]) / 1e6), int(cpu["cores"])

    def option(self, key: str) -> Any:
        """The option `key` the run was profiled with (None when info.json does not say)."""
        return self.options.get(key)
