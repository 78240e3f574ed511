"""The in-graph ring's two keys: the global step (train op = the step's increment by one) and a counter.

Each graph is read back through the raw records: every iteration has its row, with
the run number and the global step after its update, whatever the key.
"""
from __future__ import annotations

import json
import threading

import tensorflow.compat.v1 as tf

from npu_tf_profiling.runtime.session.recorder import _RingReads
from tests.helpers.models import dense, profiling_config, session_mlp
from tests.helpers.trace_files import only_prof_dir, raw_records


def _probe_types(graph: tf.Graph) -> set[str]:
    return {op.type for op in graph.get_operations() if op.name.startswith("npu_tf_profiling_probes")}


def _notes(output) -> list[str]:
    return json.loads(next(only_prof_dir(output).glob("device_*/info.json")).read_text()).get("notes", [])


def test_step_keyed_rows_follow_a_step_set_back_or_forward(tmp_path) -> None:
    """minimize(global_step=...): rows keyed by the step, no counter; a step set back mid-run
    (a checkpoint restored, say) or forward still gives every iteration its row and its step."""
    graph = tf.Graph()
    train_op, _, init, _ = session_mlp(graph)
    with graph.as_default():
        set_back = tf.assign(tf.train.get_global_step(), 2)
        set_forward = tf.assign(tf.train.get_global_step(), 100)
    with tf.Session(graph=graph, config=profiling_config(tmp_path, single_thread=False)) as sess:
        sess.run(init)
        for _ in range(6):
            sess.run(train_op)
        sess.run(set_back)
        for _ in range(4):
            sess.run(train_op)
        sess.run(set_forward)
        for _ in range(3):
            sess.run(train_op)
    assert "MutableHashTableV2" not in _probe_types(graph)  # no counter table: the step is the key
    records = raw_records(tmp_path)
    assert [r["run"] for r in records] == list(range(1, 14))
    assert [r["step"] for r in records] == [1, 2, 3, 4, 5, 6, 3, 4, 5, 6, 101, 102, 103]
    assert not [n for n in _notes(tmp_path) if "not recorded" in n]


def test_step_keyed_rows_of_a_step_that_starts_high(tmp_path) -> None:
    """A session whose global step starts where a checkpoint left it: steps carry on from there."""
    graph = tf.Graph()
    train_op, _, init, _ = session_mlp(graph)
    with graph.as_default():
        restore = tf.assign(tf.train.get_global_step(), 1000)
    with tf.Session(graph=graph, config=profiling_config(tmp_path, single_thread=False)) as sess:
        sess.run(init)
        sess.run(restore)
        for _ in range(5):
            sess.run(train_op)
    assert [r["step"] for r in raw_records(tmp_path)] == [1001, 1002, 1003, 1004, 1005]


def test_counter_keyed_rows_without_a_unit_increment(tmp_path) -> None:
    """A train op that increments the step by 2, and one with no global step: a counter keys the rows."""
    for name, increment in (("by_two", 2), ("no_step", None)):
        graph = tf.Graph()
        with graph.as_default():
            x = tf.data.make_one_shot_iterator(tf.data.Dataset.from_tensors([[1.0, 2.0]]).repeat()).get_next()
            loss = tf.reduce_mean(tf.square(dense(x, 3, "layer", seed=3)))
            update = tf.train.GradientDescentOptimizer(0.1).minimize(loss)
            if increment is None:
                train_op = update
            else:
                step = tf.train.get_or_create_global_step()
                with tf.control_dependencies([update]):
                    train_op = tf.assign_add(step, increment).op
            init = tf.global_variables_initializer()
        output = tmp_path / name
        with tf.Session(graph=graph, config=profiling_config(output, single_thread=False)) as sess:
            sess.run(init)
            for _ in range(7):
                sess.run(train_op)
        assert "MutableHashTableV2" in _probe_types(graph)  # the counter's table
        records = raw_records(output)
        assert [r["run"] for r in records] == list(range(1, 8)), name
        # By two: the iteration end found is the updates' group, and the increment waits on it, so each
        # row holds the step its iteration started with.
        assert [r["step"] for r in records] == ([None] * 7 if increment is None else [2 * i for i in range(7)]), name


def _step_graph() -> tuple[tf.Graph, tf.Operation, tf.Operation]:
    """A model trained by `minimize(global_step=...)` (rows keyed by the step in an in-process session)."""
    graph = tf.Graph()
    with graph.as_default():
        x = tf.data.make_one_shot_iterator(tf.data.Dataset.from_tensors([[1.0, 2.0]]).repeat()).get_next()
        loss = tf.reduce_mean(tf.square(dense(x, 3, "layer", seed=3)))
        train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=tf.train.get_or_create_global_step())
        init = tf.global_variables_initializer()
    return graph, train_op, init


def test_sessions_on_one_server_sharing_the_global_step(tmp_path) -> None:
    """Two graphs of one model in sessions on one server's target share its variables, the global step
    included (what workers of a parameter server do). Each session's iterations are recorded once,
    each with the step after its own update: a counter keys the rows (a step read can be another
    session's), and each graph has its own ring, though the two graphs' ops have the same names."""
    server = tf.distribute.Server.create_local_server()
    first, first_train, init = _step_graph()
    second, second_train, _ = _step_graph()
    with tf.Session(server.target, graph=first, config=profiling_config(tmp_path, single_thread=False)) as one, \
            tf.Session(server.target, graph=second, config=profiling_config(tmp_path, single_thread=False)) as two:
        one.run(init)
        for _ in range(6):
            one.run(first_train)
            two.run(second_train)
    rings = [{op.get_attr("shared_name") for op in graph.get_operations() if op.type == "MutableHashTableOfTensorsV2"} for graph in (first, second)]
    assert rings[0] and not rings[0] & rings[1]
    assert "MutableHashTableV2" in _probe_types(first) and "MutableHashTableV2" in _probe_types(second)
    records = raw_records(tmp_path)
    assert sorted(r["step"] for r in records) == list(range(1, 13))
    assert sorted(r["run"] for r in records) == sorted(list(range(1, 7)) * 2)  # each session's runs 1-6
    assert not [n for n in _notes(tmp_path) if "not recorded" in n]


def _descendants(op: tf.Operation) -> set[str]:
    """The names of the ops that wait on `op`, transitively (data and control edges)."""
    seen: set[str] = set()
    stack = [op]
    while stack:
        item = stack.pop()
        for consumer in [c for t in item.outputs for c in t.consumers()] + list(item._control_outputs):
            if consumer.name not in seen:
                seen.add(consumer.name)
                stack.append(consumer)
    return seen


def test_step_keyed_row_tail_is_the_pack_and_the_insert(tmp_path) -> None:
    """Keyed by the step, what the key needs (the step read, the slot, the table handle) is made at the start
    of the step: only the row's pack and its insert wait on the iteration end stamp before the train op,
    and the step read waits on nothing of the step (it still reads the step before the increment: the
    increment waits on the insert, which uses the key)."""
    graph = tf.Graph()
    train_op, _, init, _ = session_mlp(graph)
    with tf.Session(graph=graph, config=profiling_config(tmp_path, single_thread=False)) as sess:
        sess.run(init)
        for _ in range(3):
            sess.run(train_op)
    probes = [op for op in graph.get_operations() if op.name.startswith("npu_tf_profiling_probes")]
    end = next(op for op in probes if op.type == "Timestamp" and op.name.endswith("iteration_end"))
    tail = _descendants(end) - {train_op.name} - _descendants(train_op)
    assert sorted(graph.get_operation_by_name(n).type for n in tail) == ["LookupTableInsertV2", "Pack"]
    step_read = next(op for op in probes if op.type == "ReadVariableOp" and op.inputs[0].op.name == "global_step")
    assert not step_read.control_inputs
    assert [r["step"] for r in raw_records(tmp_path)] == [1, 2, 3]


def test_a_new_session_of_a_graph_on_the_same_server(tmp_path) -> None:
    """A graph run again by a new session on the same server (a MonitoredTrainingSession recovering
    its session): the server kept the graph's ring and counter, so the new session's rows follow the
    old ones'; its iterations are recorded once each, the old session's rows are not taken again."""
    server = tf.distribute.Server.create_local_server()
    graph, train_op, init = _step_graph()
    for _ in range(2):
        with tf.Session(server.target, graph=graph, config=profiling_config(tmp_path, single_thread=False)) as sess:
            sess.run(init)
            for _ in range(4):
                sess.run(train_op)
    records = raw_records(tmp_path)
    assert [r["run"] for r in records] == list(range(1, 9))
    assert [r["step"] for r in records] == [1, 2, 3, 4, 1, 2, 3, 4]  # init set the step back to 0
    assert not [n for n in _notes(tmp_path) if "not recorded" in n]


def test_a_run_ending_during_a_background_drain_keeps_every_row(tmp_path, monkeypatch) -> None:
    """The reader thread's drain races the training thread: a run finishes between the drain's look at the
    runs issued and its read of the step. Every row must still be read, under its own run number (seen once
    in a fresh-clone suite run: step 64's row skipped, and every later row numbered one run early)."""
    runs = threading.Condition()
    finished = [0]
    raced = threading.Event()
    original = _RingReads.progress

    def progress_after_one_more_run(self: _RingReads) -> int:
        if threading.current_thread() is not threading.main_thread() and not raced.is_set():
            raced.set()
            with runs:  # the training thread finishes a run now, after this drain looked at the runs issued
                seen = finished[0]
                runs.wait_for(lambda: finished[0] > seen, timeout=10)
        return original(self)

    monkeypatch.setattr(_RingReads, "progress", progress_after_one_more_run)
    graph = tf.Graph()
    train_op, _, init, _ = session_mlp(graph)
    with tf.Session(graph=graph, config=profiling_config(tmp_path, single_thread=False)) as sess:
        sess.run(init)
        for _ in range(40):
            sess.run(train_op)
            with runs:
                finished[0] += 1
                runs.notify_all()
            if not raced.is_set():
                raced.wait(timeout=30)  # the reader turns every 0.5 s and then waits in the patched drain for this run
        assert raced.is_set()
    records = raw_records(tmp_path)
    assert [(r["run"], r["step"]) for r in records] == [(i, i) for i in range(1, 41)]
