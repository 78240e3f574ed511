"""The table of every profiling_options key (`docs/options.md`) and how each is checked.

One `OptionSpec` per key keeps validation, defaults and the "collected here or
not" fact in one place, so adding a key is one line, not edits in four places.
"""
from __future__ import annotations

import math
import re
import unicodedata
from dataclasses import dataclass
from typing import Any, Callable

from npu_tf_profiling.config import output_folder
from npu_tf_profiling.config.errors import ProfilingOptionsError, shown
from npu_tf_profiling.config.anomaly_capture import validate_anomaly_capture
from npu_tf_profiling.config.schedule import APPLY_TO_VALUES, validate_schedule, validate_step

ON_OFF = ("on", "off")
AIC_METRICS = (
    "ArithmeticUtilization",
    "PipeUtilization",
    "Memory",
    "MemoryL0",
    "MemoryUB",
    "ResourceConflictRatio",
    "L2Cache",
    "MemoryAccess",
)
_CUSTOM_METRICS = re.compile(r"^Custom:0x[0-9a-fA-F]+(,0x[0-9a-fA-F]+)*$")
_STORAGE_LIMIT = re.compile(r"^([0-9]{1,10})MB$")  # ASCII digits only: int() of "²" or of 5,000 digits raises
_ASCII_DIGITS = re.compile(r"^[0-9]{1,20}$")
STORAGE_LIMIT_MB = (200, 4294967295)

Validator = Callable[[str, Any], Any]


def _fail(key: str, value: Any, allowed: str) -> ProfilingOptionsError:
    return ProfilingOptionsError(f"option '{key}': invalid value {shown(value)}; expected {allowed}")


def choice(*allowed: str) -> Validator:
    def check(key: str, value: Any) -> str:
        if not isinstance(value, str) or value not in allowed:
            raise _fail(key, value, "one of " + ", ".join(repr(a) for a in allowed))
        return value

    return check


def int_range(low: int, high: int, unit: str = "") -> Validator:
    """Whole numbers, given as JSON numbers or digit strings (both appear in real scripts)."""

    def check(key: str, value: Any) -> int:
        number: int | None = None
        if isinstance(value, int) and not isinstance(value, bool):
            number = value
        elif isinstance(value, str) and _ASCII_DIGITS.match(value.strip()):
            number = int(value.strip())
        if number is None or not low <= number <= high:
            raise _fail(key, value, f"a whole number from {low} to {high}{unit}")
        return number

    return check


def comma_list(*allowed: str) -> Validator:
    def check(key: str, value: Any) -> str:
        items = value.split(",") if isinstance(value, str) else None
        if not items or any(item.strip() not in allowed for item in items) or len(set(items)) != len(items):
            raise _fail(key, value, "a comma-separated list of distinct items from " + ", ".join(allowed))
        return ",".join(item.strip() for item in items)

    return check


EXPORT_TYPES = ("text", "db")


def export_type(key: str, value: Any) -> str:
    """torch_npu's ``export_type``: "text", "db" or both ("text,db", or a JSON list as torch_npu takes it).

    Normalised to a comma list in ``EXPORT_TYPES``' order, so the reports read one spelling.
    """
    items = value if isinstance(value, list) else value.split(",") if isinstance(value, str) else None
    chosen = [item.strip() if isinstance(item, str) else item for item in items or []]
    if not chosen or any(item not in EXPORT_TYPES for item in chosen) or len(set(chosen)) != len(chosen):
        raise _fail(key, value, '"text", "db", or both ("text,db" or ["text", "db"])')
    return ",".join(t for t in EXPORT_TYPES if t in chosen)


def domain_list(key: str, value: Any) -> tuple[str, ...]:
    """torch_npu's ``mstx_domain_include`` / ``mstx_domain_exclude``: domain names, as a JSON list (torch_npu's
    List) or a comma-separated text; "default" is the domain of a marker given none."""
    items = value if isinstance(value, list) else value.split(",") if isinstance(value, str) else None
    expected = 'domain names: a list of strings, e.g. ["default", "input"], or "default,input"'
    if not items or not all(isinstance(item, str) and item.strip() and not _unprintable(item) for item in items):
        raise _fail(key, value, expected)
    return tuple(dict.fromkeys(item.strip() for item in items))


def _unprintable(value: str) -> str | None:
    """What makes a name unusable: control characters (NUL, ESC, newline...) or lone surrogates (not valid Unicode)."""
    controls = sorted({repr(c) for c in value if unicodedata.category(c) == "Cc"})
    if controls:
        return f"control characters ({', '.join(controls[:5])})"
    if any(unicodedata.category(c) == "Cs" for c in value):
        return "a lone surrogate (the text is not valid Unicode)"
    return None


def op_name(key: str, value: Any) -> str:
    expected = 'an operator name string ("" = found automatically)'
    if not isinstance(value, str):
        raise _fail(key, value, expected)
    problem = _unprintable(value)
    if problem:
        raise _fail(key, value, f"{expected} without {problem}")
    return value


def path_text(key: str, value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise _fail(key, value, "a non-empty directory path string")
    problem = _unprintable(value)
    if problem:
        raise _fail(key, value, f"a path without {problem}")
    return value


def log_folder(key: str, value: Any) -> str:
    """A folder path, made absolute now (against the working directory, as ``output`` is), so the reports
    written later, at session close or by ``npu-tf-prof report`` in another folder, find the same place."""
    return str(output_folder.absolute_output(path_text(key, value), key=key))


def storage_limit(key: str, value: Any) -> str:
    match = _STORAGE_LIMIT.match(value) if isinstance(value, str) else None
    low, high = STORAGE_LIMIT_MB
    if not match or not low <= int(match.group(1)) <= high:
        raise _fail(key, value, f"a size in MB with the unit, e.g. \"500MB\", from {low}MB to {high}MB")
    return value


def milliseconds(key: str, value: Any) -> float:
    """A duration in ms, a JSON number >= 0 (finite: NaN and infinity would make every comparison false)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value >= 0:
        return float(value)
    raise _fail(key, value, "a number of milliseconds >= 0")


def aic_metrics(key: str, value: Any) -> str:
    if isinstance(value, str) and (value in AIC_METRICS or _CUSTOM_METRICS.match(value)):
        return value
    raise _fail(key, value, "one of " + ", ".join(AIC_METRICS) + ", or 'Custom:0x..' event ids")


def switch(key: str, value: Any) -> bool:
    """A switch the peers spell as a bool (torch_npu's ``profile_memory=True``); CANN's "on"/"off" read as one too."""
    if value is True or value == "on":
        return True
    if value is False or value == "off":
        return False
    raise _fail(key, value, "true or false (or \"on\" / \"off\")")


@dataclass(frozen=True)
class OptionSpec:
    key: str
    validate: Validator
    # True when this package collects or honours the option on CPU/GPU TensorFlow.
    collected: bool
    help: str


SPECS: tuple[OptionSpec, ...] = (
    OptionSpec("output", path_text, True, "where profiling data goes"),
    OptionSpec("storage_limit", storage_limit, True, "cap on this run's disk use"),
    OptionSpec("training_trace", choice(*ON_OFF), True, "iteration trace: GetNext/FP/BP/reduce/iteration end"),
    OptionSpec("task_trace", choice("on", "off", "l0", "l1"), True, "per-op task timeline"),
    OptionSpec("fp_point", op_name, True, "forward-start operator"),
    OptionSpec("bp_point", op_name, True, "backward-end operator"),
    OptionSpec("aicpu", choice(*ON_OFF), True, "AI CPU ops (host CPU ops here)"),
    OptionSpec("hccl", choice(*ON_OFF), True, "collective communication (deprecated upstream)"),
    OptionSpec("aic_metrics", aic_metrics, False, "AI Core hardware counters"),
    OptionSpec("aiv_metrics", aic_metrics, False, "AI Vector core hardware counters"),
    OptionSpec("l2", choice(*ON_OFF), False, "L2 cache sampling"),
    OptionSpec("msproftx", choice(*ON_OFF), True, "msproftx user markers (npu_tf_profiling.mstx; also spelled mstx)"),
    OptionSpec("mstx_domain_include", domain_list, True, "torch_npu's: record only the markers of these domains"),
    OptionSpec("mstx_domain_exclude", domain_list, True, "torch_npu's: record the markers of every domain but these"),
    OptionSpec("runtime_api", choice(*ON_OFF), False, "runtime API trace"),
    OptionSpec("instr_profiling", choice(*ON_OFF), False, "instruction profiling"),
    OptionSpec("ge_api", choice("off", "l0", "l1"), False, "graph-engine API trace"),
    OptionSpec("sys_hardware_mem_freq", int_range(1, 100, " Hz"), False, "device memory sampling"),
    OptionSpec("sys_io_sampling_freq", int_range(1, 100, " Hz"), False, "NIC/RoCE sampling"),
    OptionSpec("dvpp_freq", int_range(1, 100, " Hz"), False, "DVPP sampling"),
    OptionSpec("sys_interconnection_freq", int_range(1, 50, " Hz"), False, "HCCS/PCIe sampling"),
    OptionSpec("host_sys_usage_freq", int_range(1, 50, " Hz"), True, "host CPU/memory usage sampling rate"),
    OptionSpec("instr_profiling_freq", int_range(300, 30000, " Hz"), False, "instruction sampling"),
    OptionSpec("llc_profiling", choice("read", "write"), False, "LLC sampling"),
    OptionSpec("host_sys", comma_list("cpu", "mem", "disk", "network", "osrt"), True, "host system data (osrt: not collected)"),
    OptionSpec("host_sys_usage", comma_list("cpu", "mem"), True, "host system usage"),
    # Ours (not CANN keys): the collection window, see config/schedule.py.
    OptionSpec("schedule", validate_schedule, True, "ours: torch_npu-style window {skip_first, wait, warmup, active, repeat}"),
    OptionSpec("start_step", validate_step, True, "ours: MindSpore-style window start (1-based iteration, inclusive)"),
    OptionSpec("stop_step", validate_step, True, "ours: MindSpore-style window stop (1-based iteration, inclusive)"),
    OptionSpec("apply_to", choice(*APPLY_TO_VALUES), True, "ours: what the window limits: task_trace (default) or all"),
    OptionSpec("tensorboard", log_folder, True, "ours: also write the step phases as TensorBoard scalars into this logdir"),
    OptionSpec("timeline_slice_mb", int_range(1, 2048, " MiB"), True,
               "ours: largest timeline file; bigger ones are sliced as CANN does (default 200, CANN's slice_file_size)"),
    # The peers' host-side switches (torch_npu, MindSpore): runtime/host/stacks.py.
    OptionSpec("with_stack", switch, True, "sample the training thread's Python stacks (100 Hz) and name the lines holding host time"),
    OptionSpec("gc_detect_threshold", milliseconds, True, "record every Python GC pause of at least this many ms (torch_npu's key)"),
    # runtime/host/ collects it, with host_sys and msproftx.
    OptionSpec("profile_memory", switch, True, "peers' key: peak host (and GPU) memory per iteration"),
    OptionSpec("export_type", export_type, True, "torch_npu's: which reports are written: text (CSV/JSON), db (SQLite), both"),
    OptionSpec("anomaly_capture", validate_anomaly_capture, True,
               "ours: task_trace armed when iterations turn slow: \"on\" or {factor, min_us, steps, max_captures, cooldown}"),
)

SPEC_BY_KEY: dict[str, OptionSpec] = {spec.key: spec for spec in SPECS}

# Spellings that mean the same key. `task_time` is a documented alias; the rest are
# old keys found in published Ascend training scripts (accepted with a deprecation note).
ALIASES: dict[str, str] = {"task_time": "task_trace", "mstx": "msproftx"}  # mstx: torch_npu's name for the markers
# "L2": six ModelZoo TensorFlow2 scripts (SGAN, CGAN, ...) spell the l2 switch upper-case.
LEGACY_KEYS: dict[str, str] = {"result_path": "output", "aicpu_trace": "aicpu", "ai_core_metrics": "aic_metrics", "L2": "l2"}

# Profiling on with empty options means this set (`docs/options.md`).
DEFAULT_OPTIONS: dict[str, Any] = {
    "output": "./",
    "training_trace": "on",
    "task_trace": "on",
    "hccl": "on",
    "aicpu": "on",
    "aic_metrics": "PipeUtilization",
    "msproftx": "off",
}

# The value that means "not asked for" for the not-collected report.
OFF_VALUES = ("off", "")
