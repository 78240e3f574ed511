"""The options model: every key of REFERENCE §2, legacy spellings, defaults, errors."""
from __future__ import annotations

import json
import os
import warnings

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from npu_tf_profiling.config import ProfilingDeprecationWarning, ProfilingOptions, ProfilingOptionsError
from npu_tf_profiling.config.option_specs import DEFAULT_OPTIONS, SPECS

# key -> (valid values, invalid values). Every key in the spec table must appear here.
TABLE: dict[str, tuple[list, list]] = {
    "output": (["/tmp/prof", "./rel", "~/x"], ["", "  ", 3, None, "/tmp/a\nb", "/tmp/a\tb", "/tmp/\x7f"]),
    "storage_limit": (["200MB", "1024MB", "4294967295MB"], ["199MB", "4294967296MB", "500", "500mb", "500 MB", 500, "MB"]),
    "training_trace": (["on", "off"], ["ON", "true", True, 1, ""]),
    "task_trace": (["on", "off", "l0", "l1"], ["l2", "On", True]),
    "fp_point": (["", "dense/MatMul"], [1, None, ["a"], True]),
    "bp_point": (["", "gradients/dense/MatMul_grad/MatMul_1"], [1.5, {}, False]),
    "aicpu": (["on", "off"], ["yes", 0]),
    "hccl": (["on", "off"], ["enabled"]),
    "aic_metrics": (["PipeUtilization", "ArithmeticUtilization", "Memory", "MemoryL0", "MemoryUB", "ResourceConflictRatio", "L2Cache", "MemoryAccess", "Custom:0x49,0x8"], ["pipeutilization", "Custom:49", "Custom:", 7]),
    "aiv_metrics": (["Memory", "Custom:0xff"], ["Bogus"]),
    "l2": (["on", "off"], ["1"]),
    "msproftx": (["on", "off"], ["maybe"]),
    # The domain filters need msproftx on (tests/test_host_switches.py parses the good values with it).
    "mstx_domain_include": ([], [[], [""], [3], "", {"a": 1}, True]),
    "mstx_domain_exclude": ([], [[], ["\x00"], None, 7]),
    "runtime_api": (["on", "off"], [None]),
    "instr_profiling": (["on", "off"], ["l0"]),
    "ge_api": (["off", "l0", "l1"], ["on", "l2"]),
    "sys_hardware_mem_freq": ([1, 100, "50"], [0, 101, "x", 1.5, True, -1]),
    "sys_io_sampling_freq": ([1, 100], [0, 101]),
    "dvpp_freq": ([1, 100], [0, 101]),
    "sys_interconnection_freq": ([1, 50], [0, 51]),
    "host_sys_usage_freq": ([1, 50], [0, 51]),
    "instr_profiling_freq": ([300, 30000], [299, 30001]),
    "llc_profiling": (["read", "write"], ["both", ""]),
    "host_sys": (["cpu", "cpu,mem,disk,network,osrt", "osrt,cpu"], ["gpu", "cpu,cpu", "", "cpu,", 1]),
    "host_sys_usage": (["cpu", "cpu,mem"], ["disk", "cpu,mem,mem"]),
    # Ours: the collection window (config/schedule.py; semantics in tests/test_schedule.py).
    "schedule": (
        [{"skip_first": 10, "wait": 0, "warmup": 0, "active": 5, "repeat": 1}, {"skip_first": 0, "wait": 2, "warmup": 1, "active": 3, "repeat": 0}],
        [{}, {"wait": 1}, {"active": 0}, {"active": 2, "wait": -1}, {"active": 2, "repeat": 1.5}, {"active": True}, {"activ": 3}, {"active": "3"}, [1, 2], "on", 5],
    ),
    "start_step": ([1, 7], [0, -1, "3", 2.5, True, None]),
    "stop_step": ([1, 7], [0, -2, "x", False]),
    "apply_to": (["task_trace", "all"], ["training_trace", "ALL", "", 1]),
    # absolute paths only here: a relative one is made absolute (test_view.py checks that)
    "tensorboard": (["/tmp/tb", "/tmp/logs/run 1"], ["", "  ", 3, None, "/tmp/a\nb", "/tmp/\x7f"]),
    "timeline_slice_mb": ([1, 200, 2048, "300"], [0, 2049, -1, 1.5, "", "x", True, None]),
    # The peers' host switches (runtime/host/stacks.py).
    "with_stack": ([True, False], [1, "true", None, ""]),  # "on"/"off" read as a bool (option_specs.switch)
    "gc_detect_threshold": ([0, 0.5, 10], [-1, "5", True, None, float("nan"), float("inf")]),
    # The peers' key (issue 47): a JSON bool; CANN-style "on"/"off" read as one (test_host_switches.py).
    "profile_memory": ([True, False], ["yes", 1, None, "maybe", ""]),
    # torch_npu's (other spellings normalised: tests/test_export_type.py)
    "export_type": (["text", "db", "text,db"], ["", "json", "text,text", ["db", "db"], [], ["csv"], 1, None]),
    # Ours: config/anomaly_capture.py (a dict comes back with every setting filled in: these give all five).
    "anomaly_capture": (
        ["on", "off", {"factor": 4.0, "min_us": 0, "steps": 1, "max_captures": 1000, "cooldown": 0}],
        ["yes", True, 3, {"fator": 2}, {"steps": 0}, {"steps": 2.5}, {"factor": 1.0}, {"factor": "3"}, {"cooldown": -1}, {"max_captures": True}],
    ),
}


def test_table_covers_every_key() -> None:
    assert set(TABLE) == {spec.key for spec in SPECS}


@pytest.mark.parametrize("key,value", [(k, v) for k, (good, _) in TABLE.items() for v in good])
def test_valid_value_passes(key: str, value: object) -> None:
    options = ProfilingOptions.parse({key: value})
    assert options.to_dict()[key] in (value, int(value) if isinstance(value, str) and value.isdigit() else value)


@pytest.mark.parametrize("key,value", [(k, v) for k, (_, bad) in TABLE.items() for v in bad])
def test_invalid_value_names_the_key(key: str, value: object) -> None:
    with pytest.raises(ProfilingOptionsError) as info:
        ProfilingOptions.parse({key: value})
    message = str(info.value)
    assert f"'{key}'" in message and "expected" in message
    assert repr(value) in message


def test_unknown_key_gets_close_match() -> None:
    with pytest.raises(ProfilingOptionsError, match=r"unknown option 'trainig_trace' \(did you mean 'training_trace'\?\)"):
        ProfilingOptions.parse('{"trainig_trace": "on"}')


def test_far_unknown_key_lists_known_options() -> None:
    with pytest.raises(ProfilingOptionsError, match="known options: .*training_trace"):
        ProfilingOptions.parse({"zzzzzz": "on"})


def test_invalid_json_reports_line_and_column() -> None:
    with pytest.raises(ProfilingOptionsError, match="line 2 column 5"):
        ProfilingOptions.parse('{"output": "/tmp",\n    training_trace: "on"}')


@pytest.mark.parametrize("text", ["[1, 2]", '"on"', "3"])
def test_json_that_is_not_an_object(text: str) -> None:
    with pytest.raises(ProfilingOptionsError, match="expected a JSON object"):
        ProfilingOptions.parse(text)


def test_task_time_is_an_alias_of_task_trace() -> None:
    options = ProfilingOptions.parse({"task_time": "l1"})
    assert options.task_trace == "l1"
    assert json.loads(options.to_json()) == {"task_trace": "l1"}
    with pytest.raises(ProfilingOptionsError, match="given twice"):
        ProfilingOptions.parse({"task_time": "on", "task_trace": "off"})


@pytest.mark.parametrize("empty", [None, "", "   ", {}, b""])
def test_empty_options_mean_the_documented_defaults(empty: object) -> None:
    assert ProfilingOptions.parse(empty).to_dict() == DEFAULT_OPTIONS


def test_not_collected_lists_accepted_keys_that_do_nothing_here() -> None:
    options = ProfilingOptions.parse({"training_trace": "on", "aic_metrics": "PipeUtilization", "l2": "on", "msproftx": "off", "ge_api": "off"})
    assert options.not_collected() == ["aic_metrics", "l2"]
    assert options.to_dict()["l2"] == "on"  # kept, never dropped


def test_storage_limit_bytes() -> None:
    assert ProfilingOptions.parse({"storage_limit": "200MB"}).storage_limit_bytes == 200 * 1024 * 1024
    assert ProfilingOptions.parse({"training_trace": "on"}).storage_limit_bytes is None


# ----- legacy forms found in published Ascend scripts ---------------------------------------
def _parse_with_notes(source: object) -> tuple[ProfilingOptions, list[str]]:
    options = ProfilingOptions.parse(source)  # type: ignore[arg-type]
    return options, list(options.notes)


def test_legacy_colon_list() -> None:
    options, notes = _parse_with_notes("task_trace:training_trace")
    assert options.to_dict() == {"task_trace": "on", "training_trace": "on"}
    assert len(notes) == 1 and '{"task_trace":"on","training_trace":"on"}' in notes[0]


def test_colon_list_with_unknown_switch_is_reported_as_bad_json() -> None:
    with pytest.raises(ProfilingOptionsError, match="invalid JSON"):
        ProfilingOptions.parse("task_trace:bogus_switch")


@pytest.mark.parametrize("old,new,value", [("result_path", "output", "/tmp/p"), ("aicpu_trace", "aicpu", "on"), ("ai_core_metrics", "aic_metrics", "Memory"),
                                           ("L2", "l2", "off")])
def test_legacy_keys_are_renamed_with_a_note(old: str, new: str, value: str) -> None:
    options, notes = _parse_with_notes({old: value})
    assert options.to_dict() == {new: value}
    assert notes == [f"profiling option '{old}' is deprecated; use '{new}'"]


def test_a_key_in_the_wrong_case_is_refused_naming_the_right_one() -> None:
    with pytest.raises(ProfilingOptionsError, match=r"unknown option 'Task_Trace' \(did you mean 'task_trace'\?\)"):
        ProfilingOptions.parse('{"Task_Trace":"on"}')


def test_json_spread_over_lines_with_shell_continuations() -> None:
    text = '{"output":"/tmp/prof",\\\n                          "training_trace":"on",\\\n          "fp_point":""}'
    options, notes = _parse_with_notes(text)
    assert options.to_dict() == {"output": "/tmp/prof", "training_trace": "on", "fp_point": ""}
    assert len(notes) == 1 and "one line" in notes[0]


def test_multiline_json_with_long_space_runs_is_plain_json() -> None:
    text = '{\n        "output":        "/tmp/prof",\n\t\t"training_trace":     "on"\n      }'
    options, notes = _parse_with_notes(text)
    assert options.training_trace == "on" and notes == []


# ----- output folder -------------------------------------------------------------------------
def test_relative_output_resolves_against_cwd_and_is_created(tmp_path) -> None:
    options = ProfilingOptions.parse({"output": "sub/dir"})
    path = options.resolve_output(cwd=tmp_path)
    assert path == tmp_path / "sub" / "dir" and path.is_dir()


@pytest.mark.skipif(os.geteuid() == 0, reason="root can write anywhere")
def test_unwritable_output_is_an_error(tmp_path) -> None:  # pragma: no cover - CI runs as root
    locked = tmp_path / "locked"
    locked.mkdir(mode=0o500)
    with pytest.raises(ProfilingOptionsError, match="not writable"):
        ProfilingOptions.parse({"output": str(locked)}).resolve_output()


def test_output_under_a_file_is_an_error(tmp_path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("x")
    with pytest.raises(ProfilingOptionsError, match=r"option 'output': '.*file/sub' cannot be a folder: '.*file' is a file, not a folder"):
        ProfilingOptions.parse({"output": str(blocker / "sub")}).resolve_output()


def test_output_in_a_read_only_filesystem_is_an_error() -> None:
    with pytest.raises(ProfilingOptionsError, match="option 'output'"):
        ProfilingOptions.parse({"output": "/proc/npu_tf_profiling_out"}).resolve_output()


# ----- fuzzing --------------------------------------------------------------------------------
_json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=12),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3),
    max_leaves=8,
)
_keys = st.sampled_from([spec.key for spec in SPECS] + ["task_time", "result_path", "aicpu_trace", "ai_core_metrics"]) | st.text(max_size=15)
_value_for_key = st.one_of(
    _json_values,
    st.sampled_from(["on", "off", "l0", "l1", "200MB", "PipeUtilization", "cpu,mem", "read", "50", "Custom:0x1"]),
    st.integers(min_value=0, max_value=40000),
)


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(_keys, _value_for_key, max_size=6))
def test_fuzz_dicts_parse_or_raise_options_error(raw: dict) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            options = ProfilingOptions.parse(raw)
        except ProfilingOptionsError:
            return
    assert ProfilingOptions.parse(options.to_json()) == options


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=80) | st.builds(json.dumps, st.dictionaries(_keys, _value_for_key, max_size=4)))
def test_fuzz_text_parses_or_raises_options_error(text: str) -> None:
    try:
        options = ProfilingOptions.parse(text)
    except ProfilingOptionsError:
        return
    assert ProfilingOptions.parse(options.to_json()) == options


def test_deprecation_notes_are_shown_by_default() -> None:
    """Not a DeprecationWarning (hidden by default): the person running the script must see it."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.resetwarnings()  # Python's default filters, as an ordinary script has them:
        warnings.filterwarnings("ignore", category=DeprecationWarning)
        warnings.filterwarnings("ignore", category=PendingDeprecationWarning)
        from npu_tf_profiling.config import ProfilingConfig

        ProfilingConfig(True, '{"aicpu_trace": "on"}')
    assert [type(w.message) for w in caught] == [ProfilingDeprecationWarning]
    assert "use 'aicpu'" in str(caught[0].message)


def test_anomaly_capture_refuses_training_trace_off() -> None:
    with pytest.raises(ProfilingOptionsError, match="'anomaly_capture' needs training_trace"):
        ProfilingOptions.parse({"training_trace": "off", "anomaly_capture": "on"})
    assert ProfilingOptions.parse({"training_trace": "off", "anomaly_capture": "off"}).anomaly_capture == "off"
