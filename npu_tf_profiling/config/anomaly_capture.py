"""`anomaly_capture`: task_trace armed by the job itself when iterations turn slow.

A long job cannot be task-traced throughout (FULL_TRACE costs +144% to +368% a step),
and its slow stretch comes when nobody looks. So the runtime keeps a rolling baseline
of each model's iteration time and, when an iteration passes ``factor`` × baseline
(and ``min_us``), traces the tasks of the next ``steps`` iterations. These settings
bound that: how slow counts as slow, how much is captured, and how much disk it may
take (``max_captures``, ``cooldown``; ``storage_limit`` caps all data as ever).

The value is ``"on"`` (the defaults below), ``"off"``, or an object with any of the
five keys. Validated here, before training starts, like every option.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any, Mapping

from npu_tf_profiling.config.errors import ProfilingOptionsError, shown

KEY = "anomaly_capture"


@dataclass(frozen=True)
class AnomalySettings:
    """The documented defaults (docs/options.md), chosen on this loaded 2-core host.

    An iteration is slow when it takes over ``factor`` × the baseline *and* over the
    baseline + ``min_us``. factor 3: a steady run's iterations here spread to 2-10x a
    sub-millisecond median now and then (the scheduler), but rarely by 5 ms, hence min_us
    5000: a slowdown worth a capture in a real job's step of tens of milliseconds or more.
    steps 3: enough to tell a regime from a spike, at 3 traced iterations' cost.
    max_captures 5 and cooldown 200 (iterations after a capture before the next) bound the disk.
    """

    factor: float = 3.0
    min_us: int = 5000
    steps: int = 3
    max_captures: int = 5
    cooldown: int = 200

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# key -> (lowest, highest, whole number only)
_RANGES: dict[str, tuple[float, float, bool]] = {
    "factor": (1.1, 1000.0, False),
    "min_us": (0, 10**9, True),
    "steps": (1, 100, True),
    "max_captures": (1, 1000, True),
    "cooldown": (0, 10**9, True),
}


def validate_anomaly_capture(key: str, value: Any) -> str | dict[str, Any]:
    """``"on"``/``"off"`` as given, or a mapping of the settings, returned with every setting filled in."""
    if value in ("on", "off"):
        return value
    if not isinstance(value, Mapping):
        raise _fail(key, value, '"on", "off" or an object with any of ' + ", ".join(_RANGES))
    settings: dict[str, Any] = AnomalySettings().to_dict()
    for name, item in value.items():
        if name not in _RANGES:
            raise _fail(key, value, f"settings from {', '.join(_RANGES)} (unknown: {shown(name)})")
        low, high, whole = _RANGES[name]
        number_ok = isinstance(item, (int, float)) and not isinstance(item, bool) and math.isfinite(item)
        if not number_ok or (whole and item != int(item)) or not low <= item <= high:
            raise _fail(key, value, f"'{name}' {'a whole number' if whole else 'a number'} from {low} to {high}")
        settings[name] = int(item) if whole else float(item)
    return settings


def _fail(key: str, value: Any, expected: str) -> ProfilingOptionsError:
    return ProfilingOptionsError(f"option '{key}': invalid value {shown(value)}; expected {expected}")


def settings_of(value: Any) -> AnomalySettings | None:
    """The settings of a validated value (None: off or not given)."""
    if value == "on":
        return AnomalySettings()
    if not isinstance(value, Mapping):
        return None
    return AnomalySettings(**value)


def check_needs_training_trace(values: Mapping[str, Any]) -> None:
    """The iteration times the detection watches come from training_trace: it is on with anomaly_capture
    (`runtime.collection`), and turning it off explicitly as well is a contradiction, refused now."""
    if settings_of(values.get(KEY)) is not None and values.get("training_trace") == "off":
        raise ProfilingOptionsError(
            f"option '{KEY}' needs training_trace (it watches the iteration times), "
            f"but \"training_trace\" is \"off\"; remove one of them"
        )
