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
    version: int = RUN_INFO_VERSION

    def to_json(self) -> dict[str, Any]:
        """The JSON object info.json holds (`env_ignored` and `closed_us` only when set)."""
        data = dataclasses.asdict(self)
        for key in ("env_ignored", K_CLOSED):
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
            version=_int(data.get("version")) or _UNVERSIONED,
        )

    def option(self, key: str) -> Any:
        """The option `key` the run was profiled with (None when info.json does not say)."""
        return self.options.get(key)
