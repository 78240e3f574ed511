"""`ProfilingOptions`: the validated options model every way of turning profiling on shares.

Validation is eager and total: every key of `docs/options.md` is checked for type,
allowed values and ranges when the object is built, so a bad option is a clear
error before training starts instead of a silently empty trace afterwards.
"""
from __future__ import annotations

import dataclasses
import difflib
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from npu_tf_profiling.config import legacy, output_folder
from npu_tf_profiling.config.errors import ProfilingOptionsError, shown
from npu_tf_profiling.config.anomaly_capture import check_needs_training_trace
from npu_tf_profiling.config.schedule import check_window_keys
from npu_tf_profiling.config.option_specs import (
    ALIASES,
    DEFAULT_OPTIONS,
    LEGACY_KEYS,
    OFF_VALUES,
    SPEC_BY_KEY,
    STORAGE_LIMIT_MB,
)

_KNOWN_SPELLINGS = sorted(set(SPEC_BY_KEY) | set(ALIASES) | set(LEGACY_KEYS))


def check_mstx_domains(values: Mapping[str, Any]) -> list[str]:
    """The domain filters act on markers: without msproftx (mstx) on they would filter nothing, so that is refused
    now; given both, torch_npu keeps include and drops exclude, and so do we, saying so."""
    given = [key for key in ("mstx_domain_include", "mstx_domain_exclude") if values.get(key) is not None]
    if given and values.get("msproftx") != "on":
        raise ProfilingOptionsError(f"option '{given[0]}' filters the mstx markers by domain, but \"msproftx\" (\"mstx\") "
                                    f"is not \"on\": turn the markers on, or remove '{given[0]}'")
    if len(given) == 2:
        return ["mstx_domain_exclude is ignored: mstx_domain_include is given too, and wins (torch_npu's rule)"]
    return []


@dataclass(frozen=True)
class ProfilingOptions:
    """Every profiling_options key; None means "not given" (so `to_json` round-trips exactly).

    `notes` holds the deprecation notes produced while parsing legacy spellings;
    they are not options and are not serialised. `is_default_set` is True when the
    input was empty and the documented default set was filled in: its keys are the
    package's choice, not the user's, so nothing warns about them.
    """

    output: str | None = None
    storage_limit: str | None = None
    training_trace: str | None = None
    task_trace: str | None = None
    fp_point: str | None = None
    bp_point: str | None = None
    aicpu: str | None = None
    hccl: str | None = None
    aic_metrics: str | None = None
    aiv_metrics: str | None = None
    l2: str | None = None
    msproftx: str | None = None
    # torch_npu's domain filters of the markers (names; include wins when both are given).
    mstx_domain_include: tuple[str, ...] | None = None
    mstx_domain_exclude: tuple[str, ...] | None = None
    runtime_api: str | None = None
    instr_profiling: str | None = None
    ge_api: str | None = None
    sys_hardware_mem_freq: int | None = None
    sys_io_sampling_freq: int | None = None
    dvpp_freq: int | None = None
    sys_interconnection_freq: int | None = None
    host_sys_usage_freq: int | None = None
    instr_profiling_freq: int | None = None
    llc_profiling: str | None = None
    host_sys: str | None = None
    host_sys_usage: str | None = None
    # Ours: the collection window (config/schedule.py). `schedule` holds all five sub-keys once validated.
    schedule: dict[str, int] | None = None
    start_step: int | None = None
    stop_step: int | None = None
    apply_to: str | None = None
    # Ours: a TensorBoard logdir the reports also write the step phases into (absolute once validated).
    tensorboard: str | None = None
    # Ours: the largest step-trace timeline file, MiB; longer ones are sliced as CANN slices (reports.encoders.trace_slices).
    timeline_slice_mb: int | None = None
    # The peers' host-side switches: sample the training thread's stacks; record GC pauses >= this many ms.
    with_stack: bool | None = None
    gc_detect_threshold: float | None = None
    # The peers' key (torch_npu, MindSpore): peak memory per iteration (runtime/host/).
    profile_memory: bool | None = None
    # torch_npu's: which reports are written, "text", "db" or "text,db" (None: both; reports.export_types).
    export_type: str | None = None
    # Ours: task_trace armed when iterations turn slow (config/anomaly_capture.py): "off" or every setting.
    anomaly_capture: str | dict[str, Any] | None = None
    notes: tuple[str, ...] = field(default=(), compare=False, repr=False)
    is_default_set: bool = field(default=False, compare=False, repr=False)

    # ----- construction -------------------------------------------------------------------
    @classmethod
    def parse(cls, source: str | bytes | Mapping[str, Any] | None, *, origin: str = "profiling_options") -> "ProfilingOptions":
        """Build from a JSON text, a dict, or None/"" (which means the default option set).

        `origin` names where the text came from (e.g. "PROFILING_OPTIONS") in error messages.
        """
        notes: list[str] = []
        if source is None:
            raw: Mapping[str, Any] = {}
        elif isinstance(source, Mapping):
            raw = source
        elif isinstance(source, (str, bytes)):
            raw = cls._parse_text(source, origin, notes)
        else:
            raise ProfilingOptionsError(f"{origin}: expected a JSON text or a dict, got {type(source).__name__}")
        if not raw:
            return dataclasses.replace(cls._from_mapping(DEFAULT_OPTIONS, origin, notes), is_default_set=True)
        return cls._from_mapping(raw, origin, notes)

    @staticmethod
    def _parse_text(source: str | bytes, origin: str, notes: list[str]) -> Mapping[str, Any]:
        if isinstance(source, bytes):
            try:
                source = source.decode("utf-8")
            except UnicodeDecodeError as exc:
                raise ProfilingOptionsError(f"{origin}: not UTF-8 text ({exc})") from None
        if not source.strip():
            return {}
        colon = legacy.colon_list_to_dict(source)
        if colon is not None:
            notes.append(colon[1])
            return colon[0]
        text, note = legacy.strip_line_continuations(source)
        if note:
            notes.append(note)
        try:
            parsed = json.loads(text, object_pairs_hook=_object_without_repeats, parse_int=_whole_number)
        except json.JSONDecodeError as exc:
            raise ProfilingOptionsError(
                f"{origin}: invalid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}"
            ) from None
        except RecursionError:
            raise ProfilingOptionsError(f"{origin}: invalid JSON: nested too deeply") from None
        except _RepeatedKey as exc:
            raise ProfilingOptionsError(
                f"{origin}: key {shown(exc.key)} is given twice in one JSON object; keep one (JSON would silently keep the last)"
            ) from None
        if not isinstance(parsed, dict):
            raise ProfilingOptionsError(f"{origin}: expected a JSON object {{\"key\": \"value\", ...}}, got {type(parsed).__name__}")
        return parsed

    @classmethod
    def _from_mapping(cls, raw: Mapping[str, Any], origin: str, notes: list[str]) -> "ProfilingOptions":
        renamed, legacy_notes = legacy.rename_legacy_keys(dict(raw), origin)
        notes.extend(legacy_notes)
        values: dict[str, Any] = {}
        spelled: dict[str, str] = {}
        for key, value in renamed.items():
            if not isinstance(key, str):
                raise ProfilingOptionsError(f"{origin}: option names must be strings, got {key!r}")
            canonical = ALIASES.get(key, key)
            spec = SPEC_BY_KEY.get(canonical)
            if spec is None:
                raise ProfilingOptionsError(f"{origin}: unknown option {shown(key)}{_suggestion(key)}")
            if canonical in values:
                raise ProfilingOptionsError(
                    f"{origin}: option '{canonical}' is given twice, as '{spelled[canonical]}' and as '{key}'; keep one"
                )
            spelled[canonical] = key
            try:
                values[canonical] = spec.validate(canonical, value)
            except ProfilingOptionsError as exc:
                raise ProfilingOptionsError(f"{origin}: {exc}") from None
        try:
            check_window_keys(values)
            check_needs_training_trace(values)
            notes.extend(check_mstx_domains(values))
        except ProfilingOptionsError as exc:
            raise ProfilingOptionsError(f"{origin}: {exc}") from None
        return cls(**values, notes=tuple(notes))

    def mstx_domains(self) -> tuple[frozenset[str] | None, frozenset[str]]:
        """(the only domains recorded, or None: all; the domains left out), torch_npu's way: include wins."""
        if self.mstx_domain_include is not None:
            return frozenset(self.mstx_domain_include), frozenset()
        return None, frozenset(self.mstx_domain_exclude or ())

    # ----- views --------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """The options that were given, by canonical key."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.compare and getattr(self, f.name) is not None}

    def to_json(self) -> str:
        return json.dumps(self.to_dict(), sort_keys=True)

    def is_on(self, key: str) -> bool:
        value = getattr(self, key)
        return value is not None and value is not False and value not in OFF_VALUES

    def not_collected(self) -> list[str]:
        """Keys set (to something other than off) that nothing collects on CPU/GPU.

        info.json lists these as "accepted, not collected on <device>": they are never
        silently dropped; the runtime also warns about those the user wrote.
        """
        return [key for key, value in self.to_dict().items() if not SPEC_BY_KEY[key].collected and value not in OFF_VALUES]

    @property
    def storage_limit_bytes(self) -> int | None:
        if self.storage_limit is None:
            return None
        return int(self.storage_limit[: -len("MB")]) * 1024 * 1024

    def resolve_output(self, cwd: str | os.PathLike[str] | None = None) -> Path:
        """The absolute output directory, created if missing and proven writable.

        Called at resolution time (session creation / config build), so a bad path fails
        before any training step runs rather than when the first data is written. The
        ``tensorboard`` logdir too (absolute since parsing): its scalars are written at
        exit, when a folder that cannot take them would lose them with only a warning.
        """
        raw = self.output if self.output is not None else DEFAULT_OPTIONS["output"]
        path = output_folder.absolute_output(raw, cwd)
        output_folder.prepare(path)
        if self.tensorboard is not None:
            output_folder.prepare(Path(self.tensorboard), key="tensorboard")
        return path


class _RepeatedKey(Exception):
    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _object_without_repeats(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """json's object hook: a key given twice is an error, where json.loads would keep the last one silently."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _RepeatedKey(key)
        out[key] = value
    return out


class LongNumber(str):
    """A JSON integer too long to be any option's value, kept as its digits.

    Python refuses to parse integers of over 4,300 digits with a ValueError that
    names no key; kept as text, the key's own check rejects it by name.
    """

    def __repr__(self) -> str:
        return str.__str__(self)


_LONGEST_WHOLE_NUMBER = 40  # digits: beyond every option's range (the largest is int64)


def _whole_number(digits: str) -> int | LongNumber:
    return int(digits) if len(digits) <= _LONGEST_WHOLE_NUMBER else LongNumber(digits)


def _suggestion(key: str) -> str:
    by_case = [known for known in _KNOWN_SPELLINGS if known.lower() == key.lower()]  # 'Task_Trace'
    close = by_case or difflib.get_close_matches(key, _KNOWN_SPELLINGS, n=1, cutoff=0.6)
    if close:
        return f" (did you mean '{close[0]}'?)"
    return "; known options: " + ", ".join(sorted(SPEC_BY_KEY))


__all__ = ["ProfilingOptions", "ProfilingOptionsError", "STORAGE_LIMIT_MB"]
