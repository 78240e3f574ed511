"""training_trace through the sess.run path (NpuOptimizer in the session ConfigProto): real sessions, real files."""
from __future__ import annotations

import json

import numpy as np
import pytest
import tensorflow.compat.v1 as tf

from npu_tf_profiling.config import ProfilingOptionsError
from tests.helpers.models import dense, profiling_config, session_mlp
from tests.helpers.trace_files import HEADER, assert_step_trace_formulas, only_prof_dir, raw_records, step_trace_rows


def test_n_iterations_give_n_rows_with_exact_formulas(tmp_path) -> None:
    graph = tf.Graph()
    train_op, loss, init, _ = session_mlp(graph)
    with tf.Session(graph=graph, config=profiling_config(tmp_path)) as sess:
        sess.run(init)
        for _ in range(12):
            sess.run([train_op, loss])
    header, rows = step_trace_rows(tmp_path)
    assert header[: len(HEADER)] == HEADER
    assert header[len(HEADER):] == ["GetNext Start(us)", "GetNext End(us)", "GetNext Time(us)"]  # single device: no Reduce
    assert len(rows) == 12
    assert [row["Iteration ID"] for row in rows] == [str(i) for i in range(1, 13)]
    assert {row["Model ID"] for row in rows} == {"1"}
    assert all(row["GetNext Start(us)"] != "N/A" for row in rows)
    assert_step_trace_formulas(rows)
    info = json.loads(next(only_prof_dir(tmp_path).glob("device_*/info.json")).read_text())
    points = info["models"]["1"]
    assert points["fp"] == "dense/MatMul" and points["get_next"] == ["IteratorGetNext"]
    assert info["source"] == "session" and info["options"]["training_trace"] == "on"


def test_non_iterations_are_untouched_and_not_recorded(tmp_path) -> None:
    """init, loss-only and summary runs: same values as without profiling, and no rows."""
    graph = tf.Graph()
    train_op, loss, init, summary = session_mlp(graph)
    with graph.as_default():
        weights = graph.get_tensor_by_name("dense/kernel:0")
    with tf.Session(graph=graph, config=profiling_config(tmp_path)) as sess:
        assert sess.run(init) is None
        before = sess.run(weights)
        loss_only = sess.run(loss)
        assert isinstance(loss_only, np.float32)
        summary_bytes = sess.run(summary)
        assert isinstance(summary_bytes, bytes) and b"loss" in summary_bytes
        np.testing.assert_array_equal(sess.run(weights), before)  # nothing trained, nothing probed
        assert sess.run({"loss": loss, "step": train_op})["step"] is None  # a dict fetch is an iteration
    rows = raw_records(tmp_path)
    assert len(rows) == 1


def _train_losses(config: tf.ConfigProto | None, steps: int = 20) -> tuple[list[float], list[np.ndarray]]:
    graph = tf.Graph()
    train_op, loss, init, _ = session_mlp(graph, seed=7)
    with graph.as_default():
        variables = tf.trainable_variables()
    base = tf.ConfigProto(inter_op_parallelism_threads=1, intra_op_parallelism_threads=1)
    if config is not None:
        base.MergeFrom(config)
    with tf.Session(graph=graph, config=base) as sess:
        sess.run(init)
        losses = [float(sess.run([train_op, loss])[1]) for _ in range(steps)]
        return losses, sess.run(variables)


def test_profiling_does_not_change_results(tmp_path) -> None:
    plain_losses, plain_weights = _train_losses(None)
    profiled_losses, profiled_weights = _train_losses(profiling_config(tmp_path))
    assert profiled_losses == plain_losses
    for a, b in zip(plain_weights, profiled_weights):
        np.testing.assert_array_equal(a, b)
    assert len(raw_records(tmp_path)) == 20


def test_slow_input_shows_in_getnext_and_data_aug_bound(tmp_path) -> None:
    graph = tf.Graph()
    train_op, _, init, _ = session_mlp(graph, sleep_s=0.03)
    with tf.Session(graph=graph, config=profiling_config(tmp_path)) as sess:
        sess.run(init)
        for _ in range(6):
            sess.run(train_op)
    _, rows = step_trace_rows(tmp_path)
    # The pipeline reads only when asked (tests.models.input_fn: no prefetch), so every read holds the sleep;
    # the first row is left out as the executor's set-up.
    steady = rows[1:]
    getnext = [float(r["GetNext Time(us)"]) for r in steady]
    fp_bp = [float(r["FP to BP Time(us)"]) for r in steady]
    assert min(getnext) > 25_000  # the 30 ms sleep is in the read
    assert max(fp_bp) < 10_000  # and not in the compute
    # The batch is not ready before it is asked for, so the read sits between the previous iteration end and FP start.
    assert min(float(r["Data Aug Bound(us)"]) for r in steady) > 25_000


def _median(rows: list[dict[str, str]], column: str) -> float:
    values = sorted(float(r[column]) for r in rows[1:])
    return values[len(values) // 2]


def test_slow_model_shows_in_fp_to_bp(tmp_path) -> None:
    medians = {}
    for name, extra in (("light", 0), ("heavy", 6)):
        graph = tf.Graph()
        train_op, _, init, _ = session_mlp(graph, batch=512, extra_flops=extra)
        with tf.Session(graph=graph, config=profiling_config(tmp_path / name)) as sess:
            sess.run(init)
            for _ in range(8):
                sess.run(train_op)
        _, rows = step_trace_rows(tmp_path / name)
        medians[name] = {c: _median(rows, c) for c in ("FP to BP Time(us)", "GetNext Time(us)")}
    heavy, light = medians["heavy"], medians["light"]
    assert heavy["FP to BP Time(us)"] > 10 * light["FP to BP Time(us)"], medians
    # The time is in compute, not input: against the batch's read. Not against Data Aug Bound, which also holds the
    # host's time between runs: under load (load average 7-9) it reached 9 ms against FP to BP's 7-15 ms.
    assert heavy["FP to BP Time(us)"] > 2 * heavy["GetNext Time(us)"], medians


def test_unwritable_output_fails_before_training(tmp_path) -> None:
    (tmp_path / "file").write_text("")
    graph = tf.Graph()
    session_mlp(graph)
    with pytest.raises(ProfilingOptionsError, match=r"option 'output': .* cannot be a folder: .*file' is a file, not a folder"):
        tf.Session(graph=graph, config=profiling_config(tmp_path / "file" / "out"))




def test_feed_dict_model_is_traced_without_getnext(tmp_path) -> None:
    graph = tf.Graph()
    with graph.as_default():
        x = tf.placeholder(tf.float32, [None, 8], name="x")
        y = tf.placeholder(tf.float32, [None, 1], name="y")
        out = dense(dense(x, 16, "h", tf.nn.relu), 1, "out")
        loss = tf.losses.mean_squared_error(y, out)
        train_op = tf.train.AdamOptimizer(0.01).minimize(loss)
        init = tf.global_variables_initializer()
    rng = np.random.default_rng(0)
    with tf.Session(graph=graph, config=profiling_config(tmp_path)) as sess:
        sess.run(init)
        for _ in range(5):
            sess.run(train_op, {x: rng.normal(size=(16, 8)), y: rng.normal(size=(16, 1))})
    _, rows = step_trace_rows(tmp_path)
    assert len(rows) == 5
    assert all(r["GetNext Time(us)"] == "N/A" for r in rows)
    assert [r["Iteration ID"] for r in rows] == ["1", "2", "3", "4", "5"]  # no global step: run counter
    assert_step_trace_formulas(rows)


def test_monitored_training_session_is_profiled(tmp_path) -> None:
    graph = tf.Graph()
    train_op, loss, _, _ = session_mlp(graph)
    with graph.as_default():
        with tf.train.MonitoredTrainingSession(config=profiling_config(tmp_path), save_checkpoint_secs=None, save_summaries_steps=None) as sess:
            for _ in range(7):
                sess.run([train_op, loss])
    _, rows = step_trace_rows(tmp_path)
    assert [r["Iteration ID"] for r in rows] == [str(i) for i in range(1, 8)]
    assert_step_trace_formulas(rows)


def test_probe_wiring_never_makes_another_run_read_data(tmp_path) -> None:
    """A user fp_point that does not depend on GetNext: its FP stamp waits only on the data inputs the
    op reads (none), so wiring it in cannot make a run of the op alone consume a batch."""
    graph = tf.Graph()
    with graph.as_default():
        x = tf.data.make_one_shot_iterator(tf.data.Dataset.range(1000).map(lambda v: tf.cast(v, tf.float32)).batch(1)).get_next()
        w = tf.get_variable("w", [1], initializer=tf.ones_initializer())
        scaled = tf.multiply(w, 2.0, name="scaled")  # on the training path, but not downstream of GetNext
        loss = tf.reduce_mean((x * scaled - 1.0) ** 2)
        train_op = tf.train.GradientDescentOptimizer(0.01).minimize(loss)
        init = tf.global_variables_initializer()
    with tf.Session(graph=graph, config=profiling_config(tmp_path, fp_point="scaled")) as sess:
        sess.run(init)
        sess.run(train_op)  # batch 0
        for _ in range(3):
            sess.run(scaled)  # must not read a batch
        assert sess.run(x).tolist() == [1.0]
        sess.run(train_op)  # batch 2
    records = raw_records(tmp_path)
    assert len(records) == 2 and all(r["fp_start"] is not None for r in records)


def test_every_fetch_form_is_returned_unchanged_and_recognised(tmp_path) -> None:
    """Names as strings, variables, sparse tensors and namedtuples: the user's structure comes back as is."""
    import collections

    graph = tf.Graph()
    train_op, loss, init, _ = session_mlp(graph)
    with graph.as_default():
        kernel = [v for v in tf.global_variables() if v.name == "dense/kernel:0"][0]
        sparse = tf.SparseTensor(indices=[[0, 1]], values=[2.0], dense_shape=[2, 2])
    Pair = collections.namedtuple("Pair", "loss train")
    with tf.Session(graph=graph, config=profiling_config(tmp_path)) as sess:
        sess.run(init)
        by_name = sess.run([train_op.name, loss.name])  # strings: an iteration
        assert by_name[0] is None and isinstance(by_name[1], np.float32)
        pair = sess.run(Pair(loss, train_op))  # a namedtuple: an iteration
        assert isinstance(pair, Pair) and pair.train is None
        assert sess.run(kernel).shape == (16, 32)  # a variable: not an iteration
        value = sess.run({"s": sparse, "t": [train_op]})  # sparse + nested dict/list: an iteration
        assert value["s"].values.tolist() == [2.0] and value["t"] == [None]
    assert [r["run"] for r in raw_records(tmp_path)] == [1, 2, 3]


def test_make_callable_steps_are_iterations(tmp_path) -> None:
    graph = tf.Graph()
    train_op, loss, init, _ = session_mlp(graph)
    with tf.Session(graph=graph, config=profiling_config(tmp_path)) as sess:
        sess.run(init)
        step = sess.make_callable([loss, train_op])
        values = [step() for _ in range(3)]
        evaluate = sess.make_callable(loss)  # no train op: not an iteration
        assert isinstance(evaluate(), np.float32)
    assert all(isinstance(v, list) and len(v) == 2 and v[1] is None for v in values)
    assert [r["run"] for r in raw_records(tmp_path)] == [1, 2, 3]


def test_end_of_data_is_not_an_iteration(tmp_path) -> None:
    """An epoch loop ends with OutOfRangeError: that run raised, so it gets no Iteration ID."""
    graph = tf.Graph()
    with graph.as_default():
        iterator = tf.data.make_initializable_iterator(tf.data.Dataset.from_tensor_slices(np.ones((4, 2), np.float32)).batch(2))
        x = iterator.get_next()
        w = tf.get_variable("w", [2, 1])
        train_op = tf.train.GradientDescentOptimizer(0.1).minimize(tf.reduce_sum(tf.matmul(x, w)))
        init = tf.global_variables_initializer()
    with tf.Session(graph=graph, config=profiling_config(tmp_path)) as sess:
        sess.run(init)
        for _ in range(2):  # two epochs of two batches
            sess.run(iterator.initializer)
            with pytest.raises(tf.errors.OutOfRangeError):
                while True:
                    sess.run(train_op)
    _, rows = step_trace_rows(tmp_path)
    assert [r["Iteration ID"] for r in rows] == ["1", "2", "3", "4"]


def test_a_run_feeding_the_data_input_reads_no_batch(tmp_path) -> None:
    """Feeding GetNext's output replaces the batch: GetNext must not run, although the probes wait on it."""
    graph = tf.Graph()
    with graph.as_default():
        x = tf.data.make_one_shot_iterator(tf.data.Dataset.range(1000).map(lambda v: tf.cast(v, tf.float32)).batch(1)).get_next()
        w = tf.get_variable("w", [1], initializer=tf.ones_initializer())
        loss = tf.reduce_mean((x * w - 1.0) ** 2)
        train_op = tf.train.GradientDescentOptimizer(0.01).minimize(loss)
        init = tf.global_variables_initializer()
    with tf.Session(graph=graph, config=profiling_config(tmp_path)) as sess:
        sess.run(init)
        sess.run(train_op)  # batch 0
        sess.run(train_op, {x: [5.0]})  # the script's own data: no batch read
        assert sess.run(x).tolist() == [1.0]
    assert [r["run"] for r in raw_records(tmp_path)] == [1]  # an iteration (it counts), but its GetNext times mean nothing


def test_first_iteration_is_read_at_once_even_when_a_reader_turn_came_during_it(tmp_path) -> None:
    """The first iteration's row is on disk when its run returns (so the global step is known from the start),
    even when the background reader's turn came while that row was in flight and found nothing: a batch that
    takes 0.7 s to read makes the first run outlast a reader turn (one each 0.5 s)."""
    graph = tf.Graph()
    train_op, _, init, _ = session_mlp(graph, sleep_s=0.7)
    with tf.Session(graph=graph, config=profiling_config(tmp_path)) as sess:
        sess.run(init)
        sess.run(train_op)
        first = raw_records(tmp_path)
    assert [(r["run"], r["step"]) for r in first] == [(1, 1)]


def test_runs_of_backprop_that_never_run_the_iteration_end_are_said_so(tmp_path) -> None:
    """A GAN graph with two train ops run apart: discovery takes the critic's (it runs more updates); a script
    that trains the generator alone (a warm-up) writes no row, and after 3 such runs one note says why."""
    graph = tf.Graph()
    with graph.as_default():
        noise = tf.random.normal((8, 4), seed=1)
        real = tf.constant(np.random.default_rng(0).normal(size=(8, 6)).astype(np.float32))
        with tf.variable_scope("generator"):
            fake = dense(noise, 6, "out")
        with tf.variable_scope("critic", reuse=tf.AUTO_REUSE):
            real_score = dense(tf.nn.relu(dense(real, 8, "hidden")), 1, "score")
            fake_score = dense(tf.nn.relu(dense(fake, 8, "hidden")), 1, "score")
        critic_train = tf.train.AdamOptimizer(1e-3).minimize(
            tf.reduce_mean(fake_score) - tf.reduce_mean(real_score), var_list=tf.trainable_variables("critic"), name="critic_train")
        generator_train = tf.train.AdamOptimizer(1e-3).minimize(
            -tf.reduce_mean(fake_score), var_list=tf.trainable_variables("generator"), name="generator_train")
        init = tf.global_variables_initializer()
    with tf.Session(graph=graph, config=profiling_config(tmp_path)) as sess:
        sess.run(init)
        with pytest.warns(RuntimeWarning, match="3 runs computed gradients without running the iteration end critic_train"):
            for _ in range(3):
                sess.run(generator_train)
        sess.run(critic_train)
    info = json.loads(next(only_prof_dir(tmp_path).glob("device_*/info.json")).read_text())
    assert info["models"]["1"]["iteration_end"] == "critic_train"
    assert any("without running the iteration end critic_train" in note for note in info["notes"])
    assert len(raw_records(tmp_path)) == 1  # the one run of the iteration end
