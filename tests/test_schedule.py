"""Collection windows: torch_npu's schedule, MindSpore's start/stop_step, the default, apply_to."""
from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from npu_tf_profiling.config import CollectionWindow, ProfilingOptions, ProfilingOptionsError, ScheduleAction
from npu_tf_profiling.config.option_specs import SPEC_BY_KEY

N, R, S = ScheduleAction.NONE, ScheduleAction.RECORD, ScheduleAction.RECORD_AND_SAVE
W = N  # torch's WARMUP: nothing to warm up here (the probes are in from the start), so not recorded


def torch_schedule(wait: int, active: int, warmup: int = 0, repeat: int = 0, skip_first: int = 0):
    """torch.profiler.schedule / torch_npu.profiler.schedule, transcribed (0-based step -> action)."""

    def schedule_fn(step: int) -> ScheduleAction:
        assert step >= 0
        if step < skip_first:
            return N
        step -= skip_first
        num_steps = wait + warmup + active
        if repeat > 0 and step / num_steps >= repeat:
            return N
        mod_step = step % num_steps
        if mod_step < wait:
            return N
        if mod_step < wait + warmup:
            return W
        return R if mod_step < num_steps - 1 else S

    return schedule_fn


def actions(window: CollectionWindow, n: int) -> list[ScheduleAction]:
    return [window.action(i) for i in range(1, n + 1)]


# (profiling_options window keys, expected actions of iterations 1..len)
TABLE = [
    # torch_npu's documented example: skip 1, then 2 x (wait 1, warmup 1, active 2).
    ({"schedule": {"wait": 1, "warmup": 1, "active": 2, "repeat": 2, "skip_first": 1}}, [N, N, W, R, S, N, W, R, S, N, N]),
    # repeat 0 = forever
    ({"schedule": {"active": 1}}, [S] * 8),
    ({"schedule": {"wait": 2, "active": 1}}, [N, N, S, N, N, S, N, N, S]),
    ({"schedule": {"wait": 2, "active": 1, "repeat": 2}}, [N, N, S, N, N, S, N, N, N, N]),
    ({"schedule": {"warmup": 1, "active": 2, "repeat": 1}}, [W, R, S, N, N]),
    # the acceptance case: skip_first=2, active=3 over 10 iterations (repeat 1)
    ({"schedule": {"skip_first": 2, "active": 3, "repeat": 1}}, [N, N, R, R, S, N, N, N, N, N]),
    # skip_first with repeat 0 keeps cycling after the skip
    ({"schedule": {"skip_first": 3, "wait": 1, "active": 2}}, [N, N, N, N, R, S, N, R, S, N, R, S]),
    # MindSpore: start_step..stop_step, 1-based inclusive
    ({"start_step": 4, "stop_step": 6}, [N, N, N, R, R, S, N, N]),
    ({"start_step": 1, "stop_step": 1}, [S, N, N]),
    ({"start_step": 3}, [N, N, S, N]),  # a lone start_step: that one iteration
    ({"stop_step": 3}, [R, R, S, N]),  # a lone stop_step: from the first iteration
    # default with task_trace on: skip 10, trace 5, once
    ({"task_trace": "on"}, [N] * 10 + [R, R, R, R, S] + [N] * 5),
]


@pytest.mark.parametrize("keys,expected", TABLE, ids=[json.dumps(k) for k, _ in TABLE])
def test_window_actions_table(keys: dict, expected: list) -> None:
    window = CollectionWindow.from_options(ProfilingOptions.parse({"task_trace": "on", **keys}))
    assert window is not None
    assert actions(window, len(expected)) == expected
    assert [window.records(i) for i in range(1, len(expected) + 1)] == [a in (R, S) for a in expected]


@pytest.mark.parametrize("keys", [k for k, _ in TABLE if "schedule" in k])
def test_table_rows_match_the_transcribed_torch_schedule(keys: dict) -> None:
    params = {"wait": 0, **keys["schedule"]}
    reference = torch_schedule(**params)
    window = CollectionWindow.from_options(ProfilingOptions.parse(keys))
    assert [window.action(i) for i in range(1, 40)] == [reference(i - 1) for i in range(1, 40)]


@settings(max_examples=200, deadline=None)
@given(
    wait=st.integers(0, 4), warmup=st.integers(0, 4), active=st.integers(1, 4),
    repeat=st.integers(0, 4), skip_first=st.integers(0, 6),
)
def test_any_schedule_matches_torch(wait: int, warmup: int, active: int, repeat: int, skip_first: int) -> None:
    window = CollectionWindow(active=active, skip_first=skip_first, wait=wait, warmup=warmup, repeat=repeat)
    reference = torch_schedule(wait, active, warmup, repeat, skip_first)
    assert [window.action(i) for i in range(1, 60)] == [reference(i - 1) for i in range(1, 60)]
    if repeat:
        stop = window.stop_step
        assert stop is not None and window.records(stop) and not any(window.records(i) for i in range(stop + 1, stop + 20))
        assert window.finished_after(stop) and not window.finished_after(stop - 1)
    else:
        assert window.stop_step is None and not window.finished_after(10**6)


@settings(max_examples=100, deadline=None)
@given(start=st.integers(1, 30), length=st.integers(0, 10))
def test_start_stop_step_is_the_inclusive_range(start: int, length: int) -> None:
    stop = start + length
    window = CollectionWindow.from_options(ProfilingOptions.parse({"start_step": start, "stop_step": stop}))
    for i in range(1, stop + 5):
        assert window.records(i) == (start <= i <= stop)
        assert (window.action(i) == S) == (i == stop)
    assert (window.start_step, window.stop_step, window.source) == (start, stop, "start_stop")


def test_default_window_is_skip_ten_trace_five_once() -> None:
    window = CollectionWindow.from_options(ProfilingOptions.parse({"task_trace": "on"}))
    assert window == CollectionWindow.default()
    assert (window.skip_first, window.active, window.repeat, window.wait, window.warmup) == (10, 5, 1, 0, 0)
    assert (window.start_step, window.stop_step, window.source) == (11, 15, "default")
    # the default option set (profiling on, empty options) has task_trace on
    assert CollectionWindow.from_options(ProfilingOptions.parse("")) == CollectionWindow.default()


def test_no_window_when_task_trace_is_off_and_no_keys() -> None:
    assert CollectionWindow.from_options(ProfilingOptions.parse({"training_trace": "on"})) is None
    assert CollectionWindow.from_options(ProfilingOptions.parse({"task_trace": "off", "apply_to": "all"})) is None


def test_apply_to() -> None:
    base = {"task_trace": "on", "schedule": {"active": 2}}
    assert CollectionWindow.from_options(ProfilingOptions.parse(base)).applies_to_training_trace is False
    assert CollectionWindow.from_options(ProfilingOptions.parse({**base, "apply_to": "task_trace"})).applies_to_training_trace is False
    assert CollectionWindow.from_options(ProfilingOptions.parse({**base, "apply_to": "all"})).applies_to_training_trace is True
    default_all = CollectionWindow.from_options(ProfilingOptions.parse({"task_trace": "on", "apply_to": "all"}))
    assert default_all == CollectionWindow.default(applies_to_training_trace=True)
    # a window on a training_trace-only run limits training_trace with apply_to all
    only_steps = CollectionWindow.from_options(ProfilingOptions.parse({"training_trace": "on", "start_step": 2, "stop_step": 3, "apply_to": "all"}))
    assert only_steps.applies_to_training_trace and only_steps.records(2) and not only_steps.records(4)


# ----- errors -----------------------------------------------------------------------------------
@pytest.mark.parametrize("other", [{"start_step": 3}, {"stop_step": 4}, {"start_step": 3, "stop_step": 4}])
def test_schedule_and_start_stop_are_mutually_exclusive(other: dict) -> None:
    with pytest.raises(ProfilingOptionsError) as info:
        ProfilingOptions.parse({"schedule": {"active": 1}, **other})
    message = str(info.value)
    assert "'schedule'" in message and "'start_step'/'stop_step'" in message and "mutually exclusive" in message
    for key in other:
        assert repr(key) in message


def test_mutually_exclusive_error_names_the_origin() -> None:
    with pytest.raises(ProfilingOptionsError, match=r"^PROFILING_OPTIONS: options 'schedule' and"):
        ProfilingOptions.parse('{"schedule": {"active": 1}, "start_step": 2}', origin="PROFILING_OPTIONS")


def test_stop_before_start_is_an_error() -> None:
    with pytest.raises(ProfilingOptionsError, match=r"option 'stop_step': invalid value 3; expected a whole number >= start_step \(5\)"):
        ProfilingOptions.parse({"start_step": 5, "stop_step": 3})


@pytest.mark.parametrize(
    "schedule,fragment",
    [
        ({"activ": 3}, "unknown sub-key 'activ' (did you mean 'active'?)"),
        ({"active": 1, "skipfirst": 2}, "unknown sub-key 'skipfirst' (did you mean 'skip_first'?)"),
        ({"active": 1, "zzz": 2}, "unknown sub-key 'zzz'"),
        ({"wait": 1}, "'active' is missing"),
        ({"active": 0}, "'active' must be a whole number >= 1, got 0"),
        ({"active": 1, "repeat": -1}, "'repeat' must be a whole number >= 0, got -1"),
        ({"active": 1, "warmup": 1.0}, "'warmup' must be a whole number >= 0, got 1.0"),
        ({"active": True}, "'active' must be a whole number >= 1, got True"),
        ("skip_first=1", "not a JSON object"),
    ],
)
def test_schedule_errors_are_clear(schedule: object, fragment: str) -> None:
    with pytest.raises(ProfilingOptionsError) as info:
        ProfilingOptions.parse({"schedule": schedule})
    message = str(info.value)
    assert message.startswith("profiling_options: option 'schedule': invalid value")
    assert fragment in message and "expected" in message


def test_window_keys_are_ours_and_collected() -> None:
    for key in ("schedule", "start_step", "stop_step", "apply_to"):
        spec = SPEC_BY_KEY[key]
        assert spec.collected and spec.help.startswith("ours:")
    options = ProfilingOptions.parse({"training_trace": "on", "schedule": {"active": 2}, "apply_to": "all"})
    assert options.not_collected() == []


# ----- the options model keeps working with the new keys ------------------------------------------------
def test_schedule_is_normalised_and_round_trips() -> None:
    options = ProfilingOptions.parse({"task_trace": "on", "schedule": {"active": 3, "skip_first": 2}, "apply_to": "all"})
    assert options.schedule == {"skip_first": 2, "wait": 0, "warmup": 0, "active": 3, "repeat": 0}
    assert ProfilingOptions.parse(options.to_json()) == options
    assert json.loads(options.to_json())["schedule"] == options.schedule
    steps = ProfilingOptions.parse({"start_step": 2, "stop_step": 9})
    assert ProfilingOptions.parse(steps.to_json()) == steps and (steps.start_step, steps.stop_step) == (2, 9)


def test_options_with_a_schedule_stay_hashable_and_the_schedule_read_only() -> None:
    options = ProfilingOptions.parse({"schedule": {"active": 3}})
    assert hash(options) == hash(ProfilingOptions.parse({"schedule": {"active": 3, "repeat": 0}}))
    with pytest.raises(TypeError):
        options.schedule["active"] = 7  # type: ignore[index]
    with pytest.raises(TypeError):
        options.schedule.update(active=7)  # type: ignore[union-attr]
    assert options.schedule["active"] == 3


def test_window_validates_its_own_fields() -> None:
    with pytest.raises(ValueError, match="active"):
        CollectionWindow(active=0)
    with pytest.raises(ValueError, match="wait"):
        CollectionWindow(active=1, wait=-1)
    with pytest.raises(ValueError, match="start_step"):
        CollectionWindow.from_steps(5, 4)
    with pytest.raises(ValueError, match="start at 1"):
        CollectionWindow(active=1).action(0)


def test_describe() -> None:
    assert CollectionWindow.default().describe() == "task_trace window (default): iterations 11-15"
    text = CollectionWindow(active=2, wait=1, repeat=0, applies_to_training_trace=True).describe()
    assert text.startswith("task_trace and training_trace window (schedule): skip_first=0, wait=1")
