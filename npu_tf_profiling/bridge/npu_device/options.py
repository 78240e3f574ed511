"""`npu_device.global_options()`: the one process-wide NPU options object of Ascend's TF2 adapter.

ModelZoo TF2 scripts set its fields before `npu_device.open()`: the profiling
request (`profiling_config.enable_profiling` / `profiling_options`), which is
what this package is for, and many NPU compiler and device settings (precision
mode, data dump, fusion switches, memory sizes, ...). Upstream reads them all
when the device opens. Here the profiling fields start the TF2 step trace at
`open()` (bridge/npu_device/handle.py); the others have no CPU/GPU meaning, so they
are kept, typed, and reported once as accepted with no effect.

Field names, defaults and allowed values are upstream's (`npu_device/configs/`).
Where upstream allows any value (a path, a size) the field is typed here, so a
script that assigns the wrong kind of value is told which field and what was
expected, instead of the value travelling on unchecked. Assigning a name the
options object does not have raises `NpuOptionError` (an AttributeError, and a
ValueError as upstream raises) naming it and the closest real option: a
misspelt option is never silently ignored. No TensorFlow is imported here.
"""
from __future__ import annotations

import difflib
import threading
from dataclasses import dataclass
from typing import Any, Iterator


class NpuOptionError(AttributeError, ValueError):
    """An option name the npu_device options object does not have (upstream raises ValueError)."""


@dataclass(frozen=True)
class Option:
    """One option: its default, the types it takes and, when upstream lists them, its allowed values.

    `npu_only` options have no CPU/GPU meaning: setting one to a non-default value is
    reported at `open()`. `choices` are compared with `in`, as upstream does (so 1 is a True).
    """

    default: Any = None
    types: tuple[type, ...] = (str,)
    choices: tuple[Any, ...] | None = None
    npu_only: bool = True

    def check(self, where: str, value: Any) -> Any:
        if self.choices is not None:
            if value not in self.choices:
                raise ValueError(f"{where}: {value!r} is not one of {list(self.choices)}")
            return value
        if value is not None and not isinstance(value, self.types):
            expected = " or ".join(t.__name__ for t in self.types)
            raise TypeError(f"{where}: expected {expected} (or None), got {type(value).__name__} {value!r}")
        return value


_BOOL = (True, False)
_PATH = Option()  # a file or folder name
_TEXT = Option()
_SIZE = Option(types=(str, int))  # upstream passes it on as text, e.g. "25*1024*1024*1024" or "26843545600"
_INT = Option(types=(int,))


class OptionGroup:
    """A group of options with upstream's names; assigning checks the name and the value.

    Sub-groups (e.g. `dump_config`) are attributes too; they cannot be replaced,
    only their fields set, as upstream.
    """

    _path: str
    _options: dict[str, Option] = {}
    _groups: dict[str, type[OptionGroup]] = {}

    def __init__(self, path: str) -> None:
        object.__setattr__(self, "_path", path)
        object.__setattr__(self, "_values", {name: option.default for name, option in self._options.items()})
        for name, group in self._groups.items():
            object.__setattr__(self, name, group(f"{path}.{name}"))

    def __getattr__(self, name: str) -> Any:
        values = self.__dict__.get("_values", {})
        if name in values:
            return values[name]
        raise self._unknown(name)

    def __setattr__(self, name: str, value: Any) -> None:
        if name in self._groups:
            raise TypeError(f"{self._path}.{name} is a group of options: set its fields "
                            f"({', '.join(self._groups[name]._options)}), not the group")
        option = self._options.get(name)
        if option is None:
            raise self._unknown(name)
        self._values[name] = option.check(f"{self._path}.{name}", value)

    def _unknown(self, name: str) -> NpuOptionError:
        known = [*self._options, *self._groups]
        close = difflib.get_close_matches(name, known, n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        return NpuOptionError(f"{self._path} has no option {name!r}{hint} (its options: {', '.join(known)})")

    def changed(self) -> Iterator[tuple[str, Any, Option]]:
        """(dotted name, value, option) of every option, in this group and below, set to a non-default value."""
        for name, option in self._options.items():
            value = self._values[name]
            if value != option.default:
                yield f"{self._path}.{name}", value, option
        for name in self._groups:
            yield from getattr(self, name).changed()

    def as_dict(self) -> dict[str, Any]:
        """Every option with a value, groups flattened (upstream's `as_dict`, values kept as set)."""
        options = {name: value for name, value in self._values.items() if value is not None}
        for name in self._groups:
            options.update(getattr(self, name).as_dict())
        return options

    def __repr__(self) -> str:
        return f"<{type(self).__name__} {self._path}: {self.as_dict()}>"


class NpuDumpConfig(OptionGroup):
    _options = {
        "enable_dump": Option(False, choices=_BOOL),
        "dump_path": _PATH,
        "dump_step": _TEXT,  # e.g. "0|5|10-20"
        "dump_mode": Option("output", choices=("input", "output", "all")),
        "enable_dump_debug": Option(False, choices=_BOOL),
        "dump_debug_mode": _TEXT,  # aicore_overflow, atomic_overflow, all
    }


class NpuProfilingConfig(OptionGroup):
    _options = {
        "enable_profiling": Option(False, choices=_BOOL, npu_only=False),
        # The options JSON (text, bytes or a dict); checked by start_tf2_profiling when the device opens.
        "profiling_options": Option(None, types=(str, bytes, dict), npu_only=False),
    }


class NpuMultiBranchesConfig(OptionGroup):
    _options = {
        "input_shape": _TEXT,
        "dynamic_node_type": Option("0", choices=("0",)),
        "dynamic_dims": _TEXT,
    }


class NpuExperimentalConfig(OptionGroup):
    _options = {"resource_path_config": _PATH}
    _groups = {"multi_branches_config": NpuMultiBranchesConfig}


class NpuConfig(OptionGroup):
    """Upstream's `NpuConfig` (also `npu_device.Config`), including fields older releases had (auto_tune_mode, ...)."""

    _options = {
        "graph_run_mode": Option(1, choices=(0, 1)),
        "graph_memory_max_size": _SIZE,
        "variable_memory_max_size": _SIZE,
        "variable_format_optimize": Option(None, choices=(None, True, False)),
        "enable_scope_fusion_passes": _TEXT,
        "fusion_switch_file": _PATH,
        "precision_mode": Option(None, choices=(
            None, "force_fp32", "allow_fp32_to_fp16", "force_fp16", "must_keep_origin_dtype", "allow_mix_precision",
            "cube_fp16in_fp32out", "allow_mix_precision_fp16", "allow_mix_precision_bf16", "allow_fp32_to_bf16")),
        "auto_tune_mode": _TEXT,  # e.g. "RL,GA"
        "op_select_implmode": Option(None, choices=(None, "high_performance", "high_precision")),
        "optypelist_for_implmode": _TEXT,
        "op_compiler_cache_mode": Option("disable", choices=("enable", "disable", "force")),
        "op_compiler_cache_dir": _PATH,
        "stream_max_parallel_num": _TEXT,
        "hcom_parallel": Option(True, choices=_BOOL),
        "hcom_multi_mode": Option(None, types=(bool, int, str)),
        "is_tailing_optimization": Option(False, choices=_BOOL),
        "op_debug_level": Option(None, choices=(None, 0, 1, 2, 3, 4)),
        "op_debug_config": _PATH,
        "debug_dir": _PATH,
        "modify_mixlist": _PATH,
        "enable_exception_dump": Option(0, choices=(0, 1)),
        "enable_small_channel": Option(False, choices=_BOOL),
        "deterministic": Option(0, choices=(0, 1)),
        "op_precision_mode": _PATH,
        "graph_exec_timeout": _INT,
        "topo_sorting_mode": Option(None, choices=(0, 1, None)),
        "customize_dtypes": _PATH,
        "overflow_flag": Option(1, choices=(0, 1)),
        "stream_sync_timeout": Option(-1, types=(int,)),
        "event_sync_timeout": Option(-1, types=(int,)),
        "external_weight": Option(False, choices=_BOOL),
        "jit_compile": Option(False, choices=_BOOL),
    }
    _groups = {
        "dump_config": NpuDumpConfig,
        "profiling_config": NpuProfilingConfig,
        "experimental": NpuExperimentalConfig,
    }

    def __init__(self, path: str = "npu_device.Config()") -> None:
        super().__init__(path)

    def npu_only_settings(self) -> list[str]:
        """The dotted names of the NPU-only options this script set (what `open()` reports once)."""
        return [name for name, _, option in self.changed() if option.npu_only]


_global: NpuConfig | None = None
_global_lock = threading.Lock()


def global_options() -> NpuConfig:
    """The process-wide options object `npu_device.open()` reads (created on first use, as upstream)."""
    global _global
    with _global_lock:
        if _global is None:
            _global = NpuConfig("npu_device.global_options()")
        return _global
