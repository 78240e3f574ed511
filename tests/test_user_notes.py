"""Notes for the person running the script: at their own line, once per process, and only about what they asked."""
from __future__ import annotations

import inspect
import json
import warnings

import tensorflow.compat.v1 as tf

from npu_tf_profiling.bridge.npu_bridge.estimator import NPUEstimator, NPURunConfig
from npu_tf_profiling.config import ProfilingConfig, ProfilingDeprecationWarning
from npu_tf_profiling.config.session_proto import write_request
from tests.helpers.models import input_fn, mlp_model_fn, session_mlp
from tests.helpers.trace_files import only_prof_dir

NOT_COLLECTED = "accepted, not collected"


def session_config(options: str) -> tf.ConfigProto:
    config = tf.ConfigProto()
    write_request(config, True, options)
    return config


def next_line() -> int:
    """The line number of the caller's next line."""
    return inspect.currentframe().f_back.f_lineno + 1


def info_of(output) -> dict:
    return json.loads(next(only_prof_dir(output).glob("device_*/info.json")).read_text())


def test_not_collected_note_is_at_the_session_line_once_per_process(tmp_path) -> None:
    graph = tf.Graph()
    session_mlp(graph)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for i in range(2):  # two sessions, two PROF folders, one note
            line = next_line()
            tf.Session(graph=graph, config=session_config(json.dumps({"output": str(tmp_path / str(i)), "aic_metrics": "PipeUtilization"}))).close()
            if i == 0:
                first_line = line
    notes = [w for w in caught if NOT_COLLECTED in str(w.message)]
    assert [str(w.message) for w in notes] == ["npu_tf_profiling: option 'aic_metrics' accepted, not collected on CPU"]
    assert (notes[0].filename, notes[0].lineno) == (__file__, first_line)
    assert info_of(tmp_path / "1")["not_collected"] == {"aic_metrics": "accepted, not collected on CPU"}  # still recorded


def test_the_default_option_set_warns_about_nothing_it_chose(tmp_path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)  # the default set writes to "./"
    graph = tf.Graph()
    session_mlp(graph)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        tf.Session(graph=graph, config=session_config("")).close()
    assert [str(w.message) for w in caught if "npu_tf_profiling" in str(w.message)] == []
    assert info_of(tmp_path)["options"]["aic_metrics"] == "PipeUtilization"


def test_estimator_notes_point_at_the_users_train_call(tmp_path) -> None:
    profiling = ProfilingConfig(True, json.dumps({"output": str(tmp_path / "prof"), "training_trace": "on", "aic_metrics": "PipeUtilization"}))
    estimator = NPUEstimator(model_fn=mlp_model_fn, config=NPURunConfig(profiling_config=profiling, model_dir=str(tmp_path / "model"),
                                                                         log_step_count_steps=None))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        line = next_line()
        estimator.train(input_fn=input_fn(), steps=2)
        estimator.train(input_fn=input_fn(), steps=2)
    notes = [w for w in caught if NOT_COLLECTED in str(w.message)]
    assert len(notes) == 1 and (notes[0].filename, notes[0].lineno) == (__file__, line)


def test_deprecation_and_knob_notes_are_at_the_users_lines_once(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("PROFILING_MODE", "TRUE")
    monkeypatch.setenv("PROFILING_OPTIONS", json.dumps({"output": str(tmp_path), "training_trace": "on"}))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        session_line = next_line()
        tf.Session(graph=tf.Graph()).close()
        tf.Session(graph=tf.Graph()).close()
        config_line = next_line()
        NPURunConfig(precision_mode="allow_mix_precision", model_dir=str(tmp_path / "m"))
        NPURunConfig(precision_mode="allow_mix_precision", model_dir=str(tmp_path / "m"))
    deprecations = [w for w in caught if issubclass(w.category, ProfilingDeprecationWarning)]
    assert [str(w.message) for w in deprecations] == ["PROFILING_MODE=TRUE is deprecated; use PROFILING_MODE=true"]
    assert (deprecations[0].filename, deprecations[0].lineno) == (__file__, session_line)
    knobs = [w for w in caught if "precision_mode accepted, no effect" in str(w.message)]
    assert len(knobs) == 1 and (knobs[0].filename, knobs[0].lineno) == (__file__, config_line)


def test_an_env_request_the_session_overrides_is_noted_and_recorded(tmp_path, monkeypatch) -> None:
    monkeypatch.setenv("PROFILING_MODE", "true")
    monkeypatch.setenv("PROFILING_OPTIONS", json.dumps({"output": str(tmp_path / "env"), "task_trace": "on"}))
    graph = tf.Graph()
    session_mlp(graph)
    options = json.dumps({"output": str(tmp_path / "session"), "training_trace": "on"})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        line = next_line()
        tf.Session(graph=graph, config=session_config(options)).close()
        tf.Session(graph=graph, config=session_config(options)).close()
    notes = [w for w in caught if "ignored" in str(w.message)]
    assert [str(w.message) for w in notes] == [
        "npu_tf_profiling: PROFILING_MODE=true and PROFILING_OPTIONS ignored: the session's profiling_options take precedence (see docs/options.md)"
    ]
    assert (notes[0].filename, notes[0].lineno) == (__file__, line)
    assert not (tmp_path / "env").exists()
    info = info_of(tmp_path / "session")
    assert info["source"] == "session"
    assert info["env_ignored"]["variables"] == {"PROFILING_MODE": "true", "PROFILING_OPTIONS": json.dumps({"output": str(tmp_path / "env"), "task_trace": "on"})}
    assert "take precedence" in info["env_ignored"]["reason"]
