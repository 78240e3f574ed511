"""Model IDs: every graph a session runs has its own, even when two graphs are identical."""
from __future__ import annotations

import json

import tensorflow.compat.v1 as tf

from tests.helpers.models import profiling_config, session_mlp
from tests.helpers.trace_files import assert_step_trace_formulas, only_prof_dir, step_trace_rows


def test_identical_graphs_in_two_sessions_get_their_own_model_ids(tmp_path) -> None:
    graphs = [tf.Graph() for _ in range(3)]
    models = [session_mlp(graph) for graph in graphs]  # built the same way: same ops, same names
    first, second = (tf.Session(graph=graphs[i], config=profiling_config(tmp_path)) for i in range(2))
    for sess, (_, _, init, _) in ((first, models[0]), (second, models[1])):
        sess.run(init)
    for _ in range(4):  # both open at once, steps interleaved
        first.run(models[0][0])
        second.run(models[1][0])
    first.close()
    second.close()
    with tf.Session(graph=graphs[2], config=profiling_config(tmp_path)) as third:  # a third one, afterwards
        third.run(models[2][2])
        for _ in range(2):
            third.run(models[2][0])
    _, rows = step_trace_rows(tmp_path)
    by_model: dict[str, list[str]] = {}
    for row in rows:
        by_model.setdefault(row["Model ID"], []).append(row["Iteration ID"])
    assert by_model == {"1": ["1", "2", "3", "4"], "2": ["1", "2", "3", "4"], "3": ["1", "2"]}
    assert_step_trace_formulas(rows)
    info = json.loads(next(only_prof_dir(tmp_path).glob("device_*/info.json")).read_text())
    assert sorted(info["models"]) == ["1", "2", "3"]
