"""Precedence of the three sources (REFERENCE §1): session × env mode × options."""
from __future__ import annotations

import itertools
import warnings

import pytest
from tensorflow.core.protobuf import config_pb2

from npu_tf_profiling.config import ProfilingDeprecationWarning, ProfilingOptionsError, resolve_profiling
from npu_tf_profiling.config.option_specs import DEFAULT_OPTIONS
from npu_tf_profiling.config.session_proto import read_request, write_request

SESSION_OPTS = '{"output": "%s/s", "training_trace": "on", "fp_point": "sess_fp"}'
ENV_OPTS = '{"output": "%s/e", "task_trace": "on", "fp_point": "env_fp"}'


def session_config(state: str, options: str) -> config_pb2.ConfigProto | None:
    if state == "absent":
        return None
    config = config_pb2.ConfigProto()
    write_request(config, state == "on", options)
    return config


def expected(session: str, env: str, session_opts: str, env_opts: str) -> tuple[str | None, str | None] | str:
    """The rule table written out independently of the implementation: (source, fp_point) or 'error'."""
    if session == "on" and session_opts:
        return ("session", "sess_fp")
    if env == "bad":
        return "error"
    if env == "true":
        return ("env", "env_fp" if env_opts else None)
    if session == "on":
        return ("session", None)
    return (None, None)


CASES = list(itertools.product(["on", "off", "absent"], ["true", "TRUE", "false", "unset", "bad"], ["set", "empty"], ["set", "empty"]))


@pytest.mark.parametrize("session,env,session_opts,env_opts", CASES)
def test_precedence_matrix(tmp_path, monkeypatch, session, env, session_opts, env_opts) -> None:
    monkeypatch.chdir(tmp_path)
    s_opts = SESSION_OPTS % tmp_path if session_opts == "set" else ""
    e_opts = ENV_OPTS % tmp_path if env_opts == "set" else ""
    environ = {} if env == "unset" else {"PROFILING_MODE": {"bad": "yes"}.get(env, env)}
    if e_opts:
        environ["PROFILING_OPTIONS"] = e_opts
    want = expected(session, env.lower(), s_opts, e_opts)
    config = session_config(session, s_opts)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ProfilingDeprecationWarning)
        if want == "error":
            with pytest.raises(ProfilingOptionsError, match=r"PROFILING_MODE='yes' is invalid; expected 'true', 'false' or 'dynamic'"):
                resolve_profiling(config, environ)
            return
        got = resolve_profiling(config, environ)
    source, fp = want
    if source is None:
        assert got is None
        return
    assert got is not None and got.source == source
    assert got.options.fp_point == fp
    if fp is None:  # empty options -> the documented default set, output "./" under the cwd
        assert got.options.to_dict() == DEFAULT_OPTIONS
        assert got.output_dir == tmp_path
    else:
        assert got.output_dir == tmp_path / ("s" if source == "session" else "e")
        assert got.output_dir.is_dir()


def test_upper_case_mode_gets_a_deprecation_note(tmp_path) -> None:
    with pytest.warns(ProfilingDeprecationWarning, match="PROFILING_MODE=TRUE is deprecated; use PROFILING_MODE=true"):
        got = resolve_profiling(None, {"PROFILING_MODE": "TRUE", "PROFILING_OPTIONS": f'{{"output": "{tmp_path}"}}'})
    assert got is not None and got.source == "env"
    with pytest.warns(ProfilingDeprecationWarning, match="use PROFILING_MODE=false"):
        assert resolve_profiling(None, {"PROFILING_MODE": "FALSE"}) is None


def test_dynamic_mode_is_no_static_request() -> None:
    assert resolve_profiling(None, {"PROFILING_MODE": "dynamic", "PROFILING_OPTIONS": '{"training_trace": "on"}'}) is None


def test_bad_env_options_name_the_variable(tmp_path) -> None:
    with pytest.raises(ProfilingOptionsError, match=r"PROFILING_OPTIONS: unknown option 'outptu' \(did you mean 'output'\?\)"):
        resolve_profiling(None, {"PROFILING_MODE": "true", "PROFILING_OPTIONS": '{"outptu": "/tmp"}'})


def test_legacy_colon_env_options_resolve_with_a_note(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    with pytest.warns(ProfilingDeprecationWarning, match="legacy colon form"):
        got = resolve_profiling(None, {"PROFILING_MODE": "true", "PROFILING_OPTIONS": "task_trace:training_trace"})
    assert got is not None and got.options.to_dict() == {"task_trace": "on", "training_trace": "on"}


def test_unwritable_output_fails_at_resolution(tmp_path) -> None:
    (tmp_path / "f").write_text("")
    config = session_config("on", f'{{"output": "{tmp_path}/f/x", "training_trace": "on"}}')
    with pytest.raises(ProfilingOptionsError, match="option 'output'"):
        resolve_profiling(config, {})


def test_session_request_round_trips_through_the_proto() -> None:
    config = config_pb2.ConfigProto()
    config.graph_options.rewrite_options.custom_optimizers.add().name = "OtherOptimizer"
    write_request(config, True, '{"training_trace":"on"}')
    again = config_pb2.ConfigProto.FromString(config.SerializeToString())
    request = read_request(again)
    assert request.present and request.profiling_mode and request.profiling_options == '{"training_trace":"on"}'
    names = [c.name for c in again.graph_options.rewrite_options.custom_optimizers]
    assert names == ["OtherOptimizer", "NpuOptimizer"]
    assert again.graph_options.rewrite_options.custom_optimizers[1].parameter_map["use_off_line"].b
