"""The run's contract in raw_format/ (the PROF folder's name, info.json as RunInfo), and how a window counts."""
from __future__ import annotations

import json
import re

from npu_tf_profiling.raw_format import layout
from npu_tf_profiling.raw_format.prof_name import ProfName
from npu_tf_profiling.raw_format.run_info import RUN_INFO_VERSION, RunInfo
from npu_tf_profiling.reports.prof_dir import report_timestamp


def test_a_new_prof_name_parses_back_and_gives_the_reports_their_stamp(tmp_path) -> None:
    name = ProfName.new(4242, now=0.0)
    text = str(name)
    assert re.fullmatch(r"PROF_4242_\d{14}_[A-Z0-9]{8}", text)
    assert ProfName.parse(text) == name and ProfName.of(tmp_path / text) == name
    assert report_timestamp(tmp_path / text) == name.stamp
    assert ProfName.new(4242, now=0.0).id != name.id  # two folders of one second stay apart


def test_a_renamed_folder_is_no_prof_name_and_its_reports_take_the_current_time(tmp_path) -> None:
    for renamed in ("my_run", "PROF_x_20240102030405_ab", "PROF_1_2024010203040_ab"):
        assert ProfName.parse(renamed) is None
    assert report_timestamp(tmp_path / "my_run", now=0.0) == ProfName.new(1, now=0.0).stamp


def test_the_window_counts_the_iteration_ids_the_reports_show_on_the_session_path(tmp_path) -> None:
    """One counting on both paths: a window selects Iteration IDs. On the Session path that is the global step once
    seen, here a restored job's (from 100), not the run number; the TensorFlow 2 path, whose Iteration ID is the
    call's run number, is held by test_tf2_tasks (the window's calls, by Iteration ID)."""
    import tensorflow.compat.v1 as tf

    from tests.helpers.models import profiling_config, session_mlp
    from tests.helpers.trace_files import only_prof_dir, step_trace_rows

    graph = tf.Graph()
    train_op, _, init_op, _ = session_mlp(graph, batch=8)
    with graph.as_default():
        restore = tf.assign(tf.train.get_global_step(), 100)
    config = profiling_config(tmp_path, task_trace="on", start_step=103, stop_step=104)
    with tf.Session(graph=graph, config=config) as sess:
        sess.run([init_op])
        sess.run(restore)
        for _ in range(6):
            sess.run(train_op)
    assert [int(r["Iteration ID"]) for r in step_trace_rows(tmp_path)[1]] == list(range(101, 107))
    (tasks,) = (only_prof_dir(tmp_path) / "mindstudio_profiler_output").glob("task_time_*.csv")
    assert {int(line.split(",")[2]) for line in tasks.read_text().splitlines()[1:]} == {103, 104}
    # The same run's info.json, written through RunInfo, reads back whole.
    written = json.loads((only_prof_dir(tmp_path) / "device_0" / layout.INFO_FILE).read_text())
    info = RunInfo.from_json(written)
    assert info.to_json() == written and info.version == RUN_INFO_VERSION
    assert info.option("start_step") == 103 and info.source == "session" and set(info.models) == {"1"}
    assert info.other_runs_recorded and info.device_id == info.rank_id == 0 and info.tensorflow_version


def test_an_older_or_damaged_info_json_reads_as_what_it_still_says() -> None:
    """info.json is written by another process, maybe another version: a field of the wrong type reads as unknown."""
    old = RunInfo.from_json({"device_id": 3, "host": "node7", "pid": "42", "rank_size": True, "notes": ["a", 5],
                             "options": [], "start_time_us": 1.5e15, "models": {"1": {"fp": "x"}}})
    assert (old.version, old.device_id, old.host, old.pid, old.rank_size) == (1, 3, "node7", None, None)
    assert old.notes == ["a"] and old.options == {} and old.start_time_us == 1.5e15 and old.models == {"1": {"fp": "x"}}
    assert not old.other_runs_recorded and old.option("output") is None
    assert RunInfo.from_json(None) == RunInfo.from_json({}) == RunInfo(version=1)
