"""Collection windows: which iterations are traced (our extension keys of profiling_options).

Three ways to say it, one model (``CollectionWindow``):

* ``"schedule": {"skip_first": S, "wait": W, "warmup": U, "active": A, "repeat": R}``,
  torch_npu's ``torch_npu.profiler.schedule`` (same semantics as
  ``torch.profiler.schedule``): skip the first S iterations, then repeat a
  cycle of W waiting, U warming up and A recording iterations, R times
  (R = 0: until the job ends). The last recording iteration of each cycle is
  ``RECORD_AND_SAVE``. Sub-keys are whole numbers >= 0 (JSON integers);
  ``active`` is required and >= 1; the others default to 0, as in torch_npu.
* ``"start_step": a, "stop_step": b``, MindSpore's: record iterations a..b
  (1-based, inclusive; 1 <= a <= b). Internally that is ``skip_first = a - 1,
  active = b - a + 1, repeat = 1``, so the actions are the same as the
  schedule's: RECORD on a..b, RECORD_AND_SAVE on b. MindSpore requires both;
  here a lone ``start_step`` records that one iteration (``stop_step``
  defaults to ``start_step``, like torch_npu's dynamic ``active`` default of
  1) and a lone ``stop_step`` records 1..b. ``schedule`` and
  start/stop are mutually exclusive.
* neither: when task_trace is on, the **default window**: skip 10
  iterations, then trace 5, once (``skip_first=10, active=5, repeat=1``,
  i.e. iterations 11-15).

``"apply_to": "task_trace"`` (default) windows only the per-op task trace;
training_trace then stays on for every iteration. ``"apply_to": "all"``
windows training_trace as well.

Iteration ids here are the runtime's per-model traced-run counter ``run``
(1-based); torch's step index is ``iteration_id - 1``. Nothing here imports
TensorFlow.
"""
from __future__ import annotations

import difflib
import enum
from dataclasses import dataclass
from typing import Any, Mapping, Optional

from npu_tf_profiling.config.errors import ProfilingOptionsError, shown

SCHEDULE_KEY = "schedule"
START_STEP_KEY = "start_step"
STOP_STEP_KEY = "stop_step"
APPLY_TO_KEY = "apply_to"
APPLY_TO_TASK_TRACE = "task_trace"
APPLY_TO_ALL = "all"
APPLY_TO_VALUES = (APPLY_TO_TASK_TRACE, APPLY_TO_ALL)
# Iteration numbers are int64 in the raw data; a window beyond that could never start.
MAX_ITERATION = 2**63 - 1

# Sub-keys in torch_npu's order, with torch_npu's defaults (None: required).
SCHEDULE_FIELDS: dict[str, Optional[int]] = {"skip_first": 0, "wait": 0, "warmup": 0, "active": None, "repeat": 0}

DEFAULT_SKIP_FIRST = 10
DEFAULT_ACTIVE = 5


class ScheduleAction(enum.Enum):
    """What to do on one iteration (torch.profiler.ProfilerAction's values).

    torch's WARMUP (1) starts its profiler ahead of recording; the probes here are in the graph from
    the first iteration, so there is nothing to warm up, and a warm-up iteration is NONE: not recorded.
    """

    NONE = 0
    RECORD = 2
    RECORD_AND_SAVE = 3


def _whole(key: str, value: Any, minimum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ProfilingOptionsError(f"option '{key}': invalid value {shown(value)}; expected a whole number >= {minimum}")
    if value > MAX_ITERATION:
        raise ProfilingOptionsError(f"option '{key}': invalid value {shown(value)}; expected a whole number <= {MAX_ITERATION}")
    return value


class ScheduleDict(dict):
    """The validated ``schedule`` value: a read-only dict (so ProfilingOptions stays hashable).

    It compares equal to, and serialises like, a plain dict of the five sub-keys.
    """

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(tuple(sorted(self.items())))

    def _read_only(self, *args: Any, **kwargs: Any) -> None:
        raise TypeError("a validated schedule is read-only; build new options instead")

    __setitem__ = __delitem__ = clear = pop = popitem = setdefault = update = _read_only  # type: ignore[assignment]

    def __ior__(self, other: Any) -> "ScheduleDict":  # type: ignore[override]
        self._read_only()
        return self

    def __reduce__(self) -> Any:
        return (ScheduleDict, (dict(self),))


_SCHEDULE_EXAMPLE = '{"skip_first": 10, "wait": 0, "warmup": 0, "active": 5, "repeat": 1}'


def validate_schedule(key: str, value: Any) -> "ScheduleDict":
    """The ``schedule`` option: a JSON object of torch_npu's sub-keys -> the full dict, defaults filled in.

    Returning every sub-key makes ``to_json`` round-trip to an equal options object.
    Errors name the option, the value, the problem and what is expected.
    """

    def fail(problem: str) -> ProfilingOptionsError:
        return ProfilingOptionsError(
            f"option '{key}': invalid value {shown(value)}: {problem}; expected an object of whole numbers like {_SCHEDULE_EXAMPLE} "
            "(active >= 1 required; skip_first, wait, warmup, repeat >= 0, default 0; repeat 0 = until the end)"
        )

    if not isinstance(value, Mapping):
        raise fail("not a JSON object")
    for sub in value:
        if not isinstance(sub, str):
            raise fail(f"sub-key names must be strings, got {sub!r}")
        if sub not in SCHEDULE_FIELDS:
            close = difflib.get_close_matches(sub, list(SCHEDULE_FIELDS), n=1, cutoff=0.6)
            hint = f" (did you mean '{close[0]}'?)" if close else ""
            raise fail(f"unknown sub-key {sub!r}{hint}")
    out: dict[str, int] = {}
    for sub, default in SCHEDULE_FIELDS.items():
        if sub not in value:
            if default is None:
                raise fail(f"'{sub}' is missing")
            out[sub] = default
            continue
        item = value[sub]
        low = 1 if sub == "active" else 0
        if isinstance(item, bool) or not isinstance(item, int) or item < low:
            raise fail(f"'{sub}' must be a whole number >= {low}, got {shown(item)}")
        if item > MAX_ITERATION:
            raise fail(f"'{sub}' must be a whole number <= {MAX_ITERATION}, got {shown(item)}")
        out[sub] = item
    return ScheduleDict(out)


def validate_step(key: str, value: Any) -> int:
    """``start_step`` / ``stop_step``: 1-based iteration numbers (JSON integers >= 1)."""
    return _whole(key, value, 1)


def check_window_keys(values: Mapping[str, Any]) -> None:
    """Cross-key rules, once every key is valid on its own (raises ProfilingOptionsError)."""
    has_schedule = values.get(SCHEDULE_KEY) is not None
    start, stop = values.get(START_STEP_KEY), values.get(STOP_STEP_KEY)
    if has_schedule and (start is not None or stop is not None):
        given = " and ".join(repr(k) for k in (START_STEP_KEY, STOP_STEP_KEY) if values.get(k) is not None)
        raise ProfilingOptionsError(
            f"options '{SCHEDULE_KEY}' and '{START_STEP_KEY}'/'{STOP_STEP_KEY}' are mutually exclusive "
            f"(both {SCHEDULE_KEY!r} and {given} were given); keep one way of setting the collection window"
        )
    if start is not None and stop is not None and stop < start:
        raise ProfilingOptionsError(
            f"option '{STOP_STEP_KEY}': invalid value {stop!r}; expected a whole number >= start_step ({start})"
        )


@dataclass(frozen=True)
class CollectionWindow:
    """Which iterations are traced, in torch_npu schedule terms (see the module doc).

    ``source`` says where it came from: ``"schedule"``, ``"start_stop"`` or
    ``"default"``. ``applies_to_training_trace`` is True for ``apply_to: all``.
    """

    active: int
    skip_first: int = 0
    wait: int = 0
    warmup: int = 0
    repeat: int = 0
    applies_to_training_trace: bool = False
    source: str = "schedule"

    def __post_init__(self) -> None:
        for name in ("skip_first", "wait", "warmup", "repeat"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 0:
                raise ValueError(f"CollectionWindow.{name} must be a whole number >= 0, got {value!r}")
        if isinstance(self.active, bool) or not isinstance(self.active, int) or self.active < 1:
            raise ValueError(f"CollectionWindow.active must be a whole number >= 1, got {self.active!r}")

    # ----- construction ---------------------------------------------------------------------
    @classmethod
    def from_steps(cls, start_step: int, stop_step: int, applies_to_training_trace: bool = False) -> "CollectionWindow":
        """MindSpore's start_step..stop_step (1-based, inclusive)."""
        if not 1 <= start_step <= stop_step:
            raise ValueError(f"need 1 <= start_step <= stop_step, got {start_step}..{stop_step}")
        return cls(active=stop_step - start_step + 1, skip_first=start_step - 1, repeat=1,
                   applies_to_training_trace=applies_to_training_trace, source="start_stop")

    @classmethod
    def default(cls, applies_to_training_trace: bool = False) -> "CollectionWindow":
        """Skip 10 iterations, trace 5, once (iterations 11-15)."""
        return cls(active=DEFAULT_ACTIVE, skip_first=DEFAULT_SKIP_FIRST, repeat=1,
                   applies_to_training_trace=applies_to_training_trace, source="default")

    @classmethod
    def from_options(cls, options: Any) -> Optional["CollectionWindow"]:
        """The window a ``ProfilingOptions`` asks for; None when no iteration is windowed.

        None means: task_trace is off and no window key is given (training_trace,
        if on, runs on every iteration). With task_trace on and no window key,
        the default window. A window given while task_trace is off only matters
        with ``apply_to: all`` (it then windows training_trace); otherwise it
        still comes back, with ``applies_to_training_trace`` False, for the caller
        to ignore or report.
        """
        to_all = getattr(options, APPLY_TO_KEY, None) == APPLY_TO_ALL
        schedule = getattr(options, SCHEDULE_KEY, None)
        start, stop = getattr(options, START_STEP_KEY, None), getattr(options, STOP_STEP_KEY, None)
        if schedule is not None:
            full = validate_schedule(SCHEDULE_KEY, schedule)
            return cls(**full, applies_to_training_trace=to_all, source="schedule")
        if start is not None or stop is not None:
            first = 1 if start is None else start
            return cls.from_steps(first, first if stop is None else stop, to_all)
        task_on = bool(getattr(options, "is_on", None)) and options.is_on("task_trace")
        if task_on:
            return cls.default(to_all)
        return None

    # ----- queries ------------------------------------------------------------------------------
    @property
    def cycle(self) -> int:
        return self.wait + self.warmup + self.active

    @property
    def start_step(self) -> int:
        """First recorded iteration id."""
        return self.skip_first + self.wait + self.warmup + 1

    @property
    def stop_step(self) -> Optional[int]:
        """Last recorded iteration id, None when the window repeats forever."""
        if self.repeat == 0:
            return None
        return self.skip_first + self.repeat * self.cycle

    def action(self, iteration_id: int) -> ScheduleAction:
        """torch_npu's schedule on the 0-based step index ``iteration_id - 1`` (its WARMUP is NONE here)."""
        if isinstance(iteration_id, bool) or not isinstance(iteration_id, int) or iteration_id < 1:
            raise ValueError(f"iteration ids start at 1, got {iteration_id!r}")
        step = iteration_id - 1
        if step < self.skip_first:
            return ScheduleAction.NONE
        step -= self.skip_first
        if self.repeat > 0 and step >= self.repeat * self.cycle:
            return ScheduleAction.NONE
        mod = step % self.cycle
        if mod < self.wait + self.warmup:
            return ScheduleAction.NONE
        return ScheduleAction.RECORD if mod < self.cycle - 1 else ScheduleAction.RECORD_AND_SAVE

    def records(self, iteration_id: int) -> bool:
        """Whether iteration ``iteration_id`` is traced (RECORD or RECORD_AND_SAVE)."""
        return self.action(iteration_id) in (ScheduleAction.RECORD, ScheduleAction.RECORD_AND_SAVE)

    def finished_after(self, iteration_id: int) -> bool:
        """True when no iteration after ``iteration_id`` will be recorded (the window is over)."""
        stop = self.stop_step
        return stop is not None and iteration_id >= stop

    def describe(self) -> str:
        target = "task_trace and training_trace" if self.applies_to_training_trace else "task_trace"
        span = f"iterations {self.start_step}-{self.stop_step}" if self.repeat == 1 and self.wait == 0 and self.warmup == 0 else (
            f"skip_first={self.skip_first}, wait={self.wait}, warmup={self.warmup}, active={self.active}, repeat={self.repeat}"
        )
        return f"{target} window ({self.source}): {span}"


__all__ = [
    "APPLY_TO_ALL",
    "APPLY_TO_TASK_TRACE",
    "CollectionWindow",
    "ScheduleAction",
    "ScheduleDict",
    "check_window_keys",
    "validate_schedule",
    "validate_step",
]
