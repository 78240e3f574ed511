"""The summary explains the fp/bp points: a user point the runtime replaced, and columns N/A on every iteration."""
from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest
import tensorflow.compat.v1 as tf

from npu_tf_profiling.cli import main
from npu_tf_profiling.config.session_proto import write_request
from npu_tf_profiling.reports.step import summary as sm
from tests.helpers.models import session_mlp
from tests.helpers.raw_fixtures import iterations, make_prof_dir, record
from tests.helpers.trace_files import only_prof_dir

pytestmark = pytest.mark.filterwarnings("ignore:.*is deprecated:UserWarning")

MISSPELT = "layer_1/Conv2D"
REASON = f"fp_point {MISSPELT!r} is not an op in this graph; the closest op names are: 'conv1/Conv2D'"


def info_with(entry: dict, options: dict | None = None) -> dict:
    return {"device_id": 0, "options": options or {}, "models": {"1": entry}}


def test_a_fallback_recorded_in_info_json_is_shown(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    entry = {"fp": "conv1/Conv2D", "bp": "gradients/conv1/Conv2D_grad/Conv2DBackpropFilter", "reasons": [],
             "trace_points_fallback": {"fp_point": {"asked": MISSPELT, "used": "conv1/Conv2D", "reason": REASON}}}
    prof = make_prof_dir(tmp_path, {0: iterations(5)}, info=info_with(entry, {"fp_point": MISSPELT}))
    (m,) = sm.summarize_prof_dir(prof).models
    assert m.point_notes == [f"fp_point {MISSPELT!r} was not used ({REASON}): conv1/Conv2D was timed instead"]
    assert main(["summary", str(prof)]) == 0
    assert f"    Note: fp_point {MISSPELT!r} was not used (" in capsys.readouterr().out
    assert main(["summary", str(prof), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)[0]["models"][0]["point_notes"] == m.point_notes


def test_a_fallback_without_an_automatic_point_says_the_columns_are_na(tmp_path: Path) -> None:
    entry = {"fp": None, "reasons": [], "trace_points_fallback": {"fp_point": {"asked": MISSPELT, "used": None}}}
    recs = [record(run=i, fp_start=None, iteration_end=1e15 + 1000 * i) for i in (1, 2, 3)]
    (m,) = sm.summarize_prof_dir(make_prof_dir(tmp_path, {0: recs}, info=info_with(entry))).models
    assert m.point_notes == [f"fp_point {MISSPELT!r} was not used: no fp_point was timed (its columns are N/A)"]


@pytest.mark.parametrize("info", [
    {},  # no info.json content at all
    {"models": []},
    {"models": {"1": "not an object"}},
    {"models": {"1": {"trace_points_fallback": "garbage"}}},
    {"models": {"1": {"trace_points_fallback": {"fp_point": {"used": 3}, "bp_point": ["x"]}}}},
    {"options": "x", "models": {"1": {"reasons": "not a list", "fp": 7}}},
])
def test_malformed_info_says_less_and_never_fails(tmp_path: Path, info: dict) -> None:
    recs = [record(run=i, fp_start=None, bp_end=None, iteration_end=1e15 + 1000 * i) for i in (1, 2, 3)]
    summary = sm.summarize_prof_dir(make_prof_dir(tmp_path, {0: recs}, info=info))
    (m,) = summary.models
    assert not m.fp_measured and not m.bp_measured
    summary.render_text()
    assert all("was not used" not in note for note in m.point_notes)


def test_unremarkable_points_add_no_note(tmp_path: Path) -> None:
    prof = make_prof_dir(tmp_path, {0: iterations(4)}, info=info_with({"fp": "a", "bp": "b", "reasons": []}))
    (m,) = sm.summarize_prof_dir(prof).models
    assert m.point_notes == [] and "Note:" not in sm.summarize_prof_dir(prof).render_text()


def test_an_off_path_user_fp_point_is_explained_after_a_real_run(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    graph = tf.Graph()
    train_op, _, init_op, _ = session_mlp(graph)
    initializer = init_op.name  # runs once, never in a training step
    config = tf.ConfigProto()
    write_request(config, True, json.dumps({"output": str(tmp_path), "training_trace": "on", "fp_point": initializer}))
    with tf.Session(graph=graph, config=config) as sess:
        sess.run(init_op)
        for _ in range(4):
            sess.run(train_op)
    prof = only_prof_dir(tmp_path)
    (m,) = sm.summarize_prof_dir(prof).models
    assert not m.fp_measured and m.bp_measured
    (note,) = m.point_notes
    assert note.startswith("FP Start is N/A on every iteration (FP Start, FP to BP and Data Aug Bound too): "
                           f"fp_point {initializer} does not run in the training step")
    assert "Leave fp_point empty to use the automatic point" in note
    assert main(["summary", str(prof)]) == 0
    assert "    Note: FP Start is N/A on every iteration" in capsys.readouterr().out


def test_a_misspelt_point_in_a_real_run_is_shown_with_the_point_used(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    graph = tf.Graph()
    train_op, _, init_op, _ = session_mlp(graph)
    config = tf.ConfigProto()
    write_request(config, True, json.dumps({"output": str(tmp_path), "training_trace": "on", "fp_point": "dense/MatMull"}))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the runtime's own note about the fallback
        with tf.Session(graph=graph, config=config) as sess:
            sess.run(init_op)
            for _ in range(4):
                sess.run(train_op)
    prof = only_prof_dir(tmp_path)
    (m,) = sm.summarize_prof_dir(prof).models
    assert m.fp_measured
    (note,) = m.point_notes
    assert note.startswith("fp_point 'dense/MatMull' was not used (fp_point 'dense/MatMull' is not an op in this graph; "
                           "the closest op names are: 'dense/MatMul'")
    assert note.endswith(": dense/MatMul was timed instead")
    assert main(["summary", str(prof)]) == 0
    assert "    Note: fp_point 'dense/MatMull' was not used" in capsys.readouterr().out
