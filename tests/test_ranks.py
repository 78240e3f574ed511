"""Rank set-up, hccl_ops and NPUDistributedOptimizer in one process: parsing, agreement errors,
the session config, the graph a multi-rank job builds, and single-rank identity.

The multi-process behaviour (values across ranks, failures, profiling) is in
tests/test_ranks_multiprocess.py. Nothing here starts a TensorFlow server.
"""
from __future__ import annotations

import json
import os
import socket
import time

import numpy as np
import pytest
import tensorflow as tf

from npu_tf_profiling.exit_codes import EXIT_RANK_LOST
from npu_tf_profiling.bridge.ranks import graph_collectives as hccl_ops
from npu_tf_profiling.bridge.ranks import session_join
from npu_tf_profiling.bridge.ranks.data_parallel import (
    NPUBroadcastGlobalVariablesHook,
    NPUDistributedOptimizer,
    allreduce,
    get_local_rank_id,
    get_local_rank_size,
    get_npu_local_rank_id,
    get_npu_rank_id,
    get_npu_rank_size,
    get_rank_id,
    get_rank_size,
    npu_distributed_optimizer_wrapper,
    overflow_across_ranks,
)
from npu_tf_profiling.bridge.ranks.discovery import (
    Peer,
    RankSetup,
    RankSetupError,
    connect_timeout_s,
    exec_timeout_s,
    rank_setup,
    tf_config_hidden_from_run_config,
)
from npu_tf_profiling.graph_points import find_trace_points

RANK_VARIABLES = ("RANK_ID", "RANK_SIZE", "TF_CONFIG", "RANK_TABLE_FILE", "HCCL_IF_BASE_PORT", "HCCL_CONNECT_TIMEOUT",
                  "HCCL_EXEC_TIMEOUT", "DEVICE_ID")


@pytest.fixture(autouse=True)
def _no_rank_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in RANK_VARIABLES:
        monkeypatch.delenv(name, raising=False)


def tf_config(cluster: dict, task_type: str, index: int) -> str:
    return json.dumps({"cluster": cluster, "task": {"type": task_type, "index": index}})


def write_rank_table(path, servers: list[tuple[str, list[tuple[int, int]]]]) -> str:
    """servers: [(server_id, [(device_id, rank_id), ...]), ...] in the Ascend rank table 1.0 layout."""
    table = {"version": "1.0", "status": "completed", "server_count": str(len(servers)), "server_list": [
        {"server_id": host, "host_nic_ip": "reserve",
         "device": [{"device_id": str(d), "device_ip": "192.168.1.1", "rank_id": str(r)} for d, r in devices]}
        for host, devices in servers
    ]}
    path.write_text(json.dumps(table))
    return str(path)


# ----------------------------------------------------------------------------- rank set-up
def test_no_rank_environment_is_one_rank() -> None:
    setup = rank_setup({})
    assert (setup.rank_id, setup.rank_size, setup.peers, setup.multi_rank) == (0, 1, (), False)
    assert (setup.local_rank_id, setup.local_rank_size) == (0, 1)


def test_rank_id_and_size_alone_switch_collectives_on_but_sessions_need_peers() -> None:
    setup = rank_setup({"RANK_ID": "2", "RANK_SIZE": "4"})
    assert (setup.rank_id, setup.rank_size, setup.multi_rank) == (2, 4, True)
    with pytest.raises(RankSetupError, match="RANK_SIZE=4 but no rank's address is known: set TF_CONFIG"):
        setup.require_peers()


def test_tf_config_peers_in_rank_order_chief_first() -> None:
    cluster = {"worker": ["w0:2222", "w1:2222"], "chief": ["c:2222"], "evaluator": ["e:2222"]}
    setup = rank_setup({"TF_CONFIG": tf_config(cluster, "worker", 1), "RANK_SIZE": "3"})
    assert (setup.rank_id, setup.rank_size, setup.multi_rank, setup.source) == (2, 3, True, "TF_CONFIG")
    assert [(p.rank, p.task_name, p.address) for p in setup.peers] == [
        (0, "/job:chief/replica:0/task:0", "c:2222"),
        (1, "/job:worker/replica:0/task:0", "w0:2222"),
        (2, "/job:worker/replica:0/task:1", "w1:2222"),
    ]
    assert setup.cluster() == {"chief": ["c:2222"], "worker": ["w0:2222", "w1:2222"]}


def test_tf_config_alone_reports_ranks_but_leaves_collectives_to_the_strategy() -> None:
    setup = rank_setup({"TF_CONFIG": tf_config({"worker": ["a:1", "b:1"]}, "worker", 1)})
    assert (setup.rank_id, setup.rank_size, setup.multi_rank) == (1, 2, False)


def test_local_rank_counts_the_ranks_on_the_same_host() -> None:
    setup = rank_setup({"TF_CONFIG": tf_config({"worker": ["a:1", "b:1", "a:2", "b:2"]}, "worker", 3), "RANK_SIZE": "4"})
    assert (setup.local_rank_id, setup.local_rank_size) == (1, 2)


@pytest.mark.parametrize(("environ", "message"), [
    ({"RANK_ID": "0", "RANK_SIZE": "3", "TF_CONFIG": tf_config({"worker": ["a:1", "b:1", "c:1"]}, "worker", 2)},
     r"RANK_ID=0 but TF_CONFIG's task is rank 2 \(chief first, then workers\)"),
    ({"RANK_SIZE": "2", "TF_CONFIG": tf_config({"worker": ["a:1", "b:1", "c:1"]}, "worker", 0)},
     "RANK_SIZE=2 but TF_CONFIG lists 3 training rank"),
    ({"RANK_ID": "4", "RANK_SIZE": "4"}, r"RANK_ID=4 is not below RANK_SIZE=4 \(RANK_ID/RANK_SIZE\)"),
    ({"RANK_SIZE": "two"}, "RANK_SIZE='two': expected a non-negative integer"),
    ({"RANK_SIZE": "0"}, "RANK_SIZE=0: a job has at least one rank"),
    ({"TF_CONFIG": "{cluster"}, "TF_CONFIG is not valid JSON"),
    ({"TF_CONFIG": tf_config({"worker": ["a:1"], "ps": ["p:1"]}, "worker", 0)}, r"parameter servers \(ps\)"),
    ({"RANK_SIZE": "1", "TF_CONFIG": tf_config({"worker": ["a"]}, "worker", 0)}, r"cluster.worker\[0\]='a': expected host:port"),
    ({"RANK_SIZE": "2", "TF_CONFIG": tf_config({"worker": ["a:1", "b:1"], "evaluator": ["e:1"]}, "evaluator", 0)},
     "TF_CONFIG's task is not a training task"),
])
def test_contradictions_are_named(environ: dict, message: str) -> None:
    with pytest.raises(RankSetupError, match=message):
        rank_setup(environ)


def test_rank_table_maps_server_list_to_host_and_base_port_plus_device_id(tmp_path) -> None:
    path = write_rank_table(tmp_path / "table.json", [("10.0.0.1", [(0, 0), (1, 1)]), ("10.0.0.2", [(1, 3), (0, 2)])])
    setup = rank_setup({"RANK_TABLE_FILE": path, "RANK_ID": "3", "RANK_SIZE": "4"})
    assert [p.address for p in setup.peers] == ["10.0.0.1:60000", "10.0.0.1:60001", "10.0.0.2:60000", "10.0.0.2:60001"]
    assert (setup.rank_id, setup.local_rank_id, setup.local_rank_size) == (3, 1, 2)
    assert setup.cluster() == {"worker": [p.address for p in setup.peers]}
    moved = rank_setup({"RANK_TABLE_FILE": path, "RANK_ID": "0", "HCCL_IF_BASE_PORT": "50000"})
    assert [p.address for p in moved.peers][:2] == ["10.0.0.1:50000", "10.0.0.1:50001"] and moved.rank_size == 4


def test_tf_config_wins_over_the_rank_table(tmp_path) -> None:
    path = write_rank_table(tmp_path / "table.json", [("10.0.0.1", [(0, 0), (1, 1)])])
    setup = rank_setup({"RANK_TABLE_FILE": path, "TF_CONFIG": tf_config({"worker": ["a:1", "b:1"]}, "worker", 1)})
    assert setup.source == "TF_CONFIG" and setup.me.address == "b:1"


def test_rank_table_errors(tmp_path) -> None:
    good = write_rank_table(tmp_path / "good.json", [("h", [(0, 0), (1, 1)])])
    with pytest.raises(RankSetupError, match="RANK_ID must say which rank of the table this process is"):
        rank_setup({"RANK_TABLE_FILE": good})
    with pytest.raises(RankSetupError, match="cannot read it"):
        rank_setup({"RANK_TABLE_FILE": str(tmp_path / "missing.json"), "RANK_ID": "0"})
    (tmp_path / "bad.json").write_text("{")
    with pytest.raises(RankSetupError, match="bad.json: not valid JSON"):
        rank_setup({"RANK_TABLE_FILE": str(tmp_path / "bad.json"), "RANK_ID": "0"})
    twice = write_rank_table(tmp_path / "twice.json", [("h", [(0, 0)]), ("g", [(0, 0)])])
    with pytest.raises(RankSetupError, match="rank_id 0 appears twice"):
        rank_setup({"RANK_TABLE_FILE": twice, "RANK_ID": "0"})
    gap = write_rank_table(tmp_path / "gap.json", [("h", [(0, 0), (1, 2)])])
    with pytest.raises(RankSetupError, match=r"rank_ids must be 0..N-1, got \[0, 2\]"):
        rank_setup({"RANK_TABLE_FILE": gap, "RANK_ID": "0"})
    (tmp_path / "old.json").write_text(json.dumps({"group_list": []}))
    with pytest.raises(RankSetupError, match=r"expected server_list\[\].server_id .* \(rank table version 1.0\)"):
        rank_setup({"RANK_TABLE_FILE": str(tmp_path / "old.json"), "RANK_ID": "0"})
    with pytest.raises(RankSetupError, match=r"HCCL_IF_BASE_PORT=80: expected a port in \[1024, 65520\]"):
        rank_setup({"RANK_TABLE_FILE": good, "RANK_ID": "0", "HCCL_IF_BASE_PORT": "80"})


def test_timeouts_default_to_canns_and_must_be_positive() -> None:
    assert (connect_timeout_s({}), exec_timeout_s({})) == (120.0, 1836.0)
    assert (connect_timeout_s({"HCCL_CONNECT_TIMEOUT": "2.5"}), exec_timeout_s({"HCCL_EXEC_TIMEOUT": "30"})) == (2.5, 30.0)
    for bad in ("0", "-3", "soon"):
        with pytest.raises(RankSetupError, match=f"HCCL_EXEC_TIMEOUT={bad!r}: expected a positive number of seconds"):
            exec_timeout_s({"HCCL_EXEC_TIMEOUT": bad})


def test_rank_helpers_read_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    assert (get_rank_id(), get_rank_size(), get_local_rank_id(), get_local_rank_size()) == (0, 1, 0, 1)
    monkeypatch.setenv("TF_CONFIG", tf_config({"chief": ["a:1"], "worker": ["a:2", "b:1"]}, "worker", 1))
    assert (get_rank_id(), get_rank_size(), get_local_rank_id(), get_local_rank_size()) == (2, 3, 0, 1)
    assert (get_npu_rank_id(), get_npu_rank_size(), get_npu_local_rank_id()) == (2, 3, 0)
    monkeypatch.setenv("RANK_ID", "1")
    with pytest.raises(RankSetupError, match="RANK_ID=1 but TF_CONFIG's task is rank 2"):
        get_rank_id()
    with pytest.raises(ValueError, match="only 'hccl_world_group'"):
        get_rank_size("my_group")


# ----------------------------------------------------------------------------- the session config
def test_configure_session_for_ranks(monkeypatch: pytest.MonkeyPatch) -> None:
    config = tf.compat.v1.ConfigProto(inter_op_parallelism_threads=2)
    assert session_join.configure_session_for_ranks(config) == tf.compat.v1.ConfigProto(inter_op_parallelism_threads=2)
    monkeypatch.setenv("RANK_SIZE", "3")
    monkeypatch.setenv("TF_CONFIG", tf_config({"chief": ["c:1"], "worker": ["w:1", "w:2"]}, "worker", 1))
    configured = session_join.configure_session_for_ranks(config)
    assert configured is config and config.inter_op_parallelism_threads == 2
    assert config.experimental.collective_group_leader == "/job:chief/replica:0/task:0"
    assert list(config.device_filters) == ["/job:worker/task:1"] and config.isolate_session_state
    again = tf.compat.v1.ConfigProto()
    again.CopyFrom(config)
    assert session_join.configure_session_for_ranks(again) == config  # idempotent


def test_a_session_of_a_multi_rank_job_without_peers_fails_before_any_step(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RANK_SIZE", "2")
    monkeypatch.setenv("RANK_ID", "1")
    with tf.Graph().as_default():
        with pytest.raises(RankSetupError, match="no rank's address is known"):
            tf.compat.v1.Session()
        monkeypatch.setenv("TF_CONFIG", tf_config({"worker": ["a:1", "b:1"]}, "worker", 0))
        with pytest.raises(RankSetupError, match="RANK_ID=1 but TF_CONFIG's task is rank 0"):
            tf.compat.v1.train.MonitoredTrainingSession()


def test_single_rank_sessions_are_left_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RANK_SIZE", "1")
    monkeypatch.setenv("TF_CONFIG", "{not json")  # never parsed: one rank needs nothing from it
    with tf.Graph().as_default(), tf.compat.v1.Session() as session:
        assert session.sess_str == b"" and session.run(tf.constant(3)) == 3


def test_run_config_sees_one_process_while_the_ranks_come_from_tf_config(monkeypatch: pytest.MonkeyPatch) -> None:
    workers = tf_config({"worker": ["a:1", "b:1"]}, "worker", 1)
    monkeypatch.setenv("TF_CONFIG", workers)
    with pytest.raises(ValueError, match='must have one "chief" node'):
        tf.estimator.RunConfig()  # what an Estimator script would meet without the bridge
    monkeypatch.setenv("RANK_SIZE", "2")
    with tf_config_hidden_from_run_config():
        config = tf.estimator.RunConfig(model_dir=None)
    assert (config.master, config.is_chief, config.num_worker_replicas, config.cluster_spec.as_dict()) == ("", True, 1, {})
    assert os.environ["TF_CONFIG"] == workers and get_rank_id() == 1


def test_npu_run_config_and_estimator_work_in_a_multi_rank_job(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    """No extra code in an Estimator script: NPURunConfig accepts the ranks' TF_CONFIG, train() broadcasts once."""
    from npu_tf_profiling.bridge.ranks.data_parallel import NPUBroadcastGlobalVariablesHook
    from npu_tf_profiling.bridge.npu_bridge.estimator import NPUEstimator, NPURunConfig
    from npu_tf_profiling.bridge.npu_bridge.hooks import npu_hooks_append

    monkeypatch.setenv("TF_CONFIG", tf_config({"worker": ["a:1", "b:1"]}, "worker", 1))
    monkeypatch.setenv("RANK_SIZE", "2")
    config = NPURunConfig(model_dir=str(tmp_path))
    assert (config.master, config.is_chief, config.num_worker_replicas) == ("", True, 1)

    def broadcasts(script_adds_hook: bool) -> int:
        def model_fn(features, mode):
            step = tf.compat.v1.train.get_or_create_global_step()
            return tf.estimator.EstimatorSpec(mode, loss=tf.constant(0.0), train_op=step.assign_add(1),
                                              training_hooks=npu_hooks_append([]) if script_adds_hook else [])

        estimator = NPUEstimator(model_fn=model_fn, config=config)
        with tf.Graph().as_default():  # build the TRAIN spec as train() does, without a session joining the job
            spec = estimator._call_model_fn(tf.constant([1.0]), None, tf.estimator.ModeKeys.TRAIN, estimator.config)
        return len([h for h in spec.training_hooks if isinstance(h, NPUBroadcastGlobalVariablesHook)])

    assert broadcasts(script_adds_hook=False) == 1  # as upstream's NPUEstimator
    assert broadcasts(script_adds_hook=True) == 1  # never twice


# ----------------------------------------------------------------------------- single rank: identity
def _train(wrap, steps: int = 5) -> list[np.ndarray]:
    with tf.Graph().as_default():
        tf.compat.v1.set_random_seed(3)
        x = tf.constant(np.linspace(-1, 1, 32, dtype=np.float32).reshape(8, 4))
        w = tf.compat.v1.get_variable("w", shape=[4, 2])
        b = tf.compat.v1.get_variable("b", shape=[2], initializer=tf.compat.v1.ones_initializer())
        loss = tf.reduce_mean(tf.square(tf.matmul(x, w) + b - 1.0))
        train_op = wrap(tf.compat.v1.train.AdamOptimizer(0.1)).minimize(loss)
        assert not [op for op in tf.compat.v1.get_default_graph().get_operations() if op.type.startswith("Collective")]
        with tf.compat.v1.Session() as session:
            session.run(tf.compat.v1.global_variables_initializer())
            for _ in range(steps):
                session.run(train_op)
            return session.run([w, b])


def test_one_rank_training_is_bit_identical_to_the_wrapped_optimizer() -> None:
    plain = _train(lambda opt: opt)
    for wrap in (NPUDistributedOptimizer, npu_distributed_optimizer_wrapper,
                 lambda opt: NPUDistributedOptimizer(opt, is_weight_update_sharding=True)):
        for got, want in zip(_train(wrap), plain):
            np.testing.assert_array_equal(got, want)


def test_one_rank_collectives_return_their_input() -> None:
    with tf.Graph().as_default() as graph:
        t = tf.constant([1.0, 2.0])
        flag = tf.constant(True)
        before = len(graph.get_operations())
        assert hccl_ops.allreduce(t, "max") is t and hccl_ops.allgather(t, 1) is t
        assert hccl_ops.broadcast(t, 0) is t and hccl_ops.broadcast([t, flag], 0) == [t, flag]
        assert hccl_ops.reduce_scatter(t, "sum", 1) is t
        assert allreduce(t) is t and allreduce([(t, "v")]) == [(t, "v")] and overflow_across_ranks(flag) is flag
        optimizer = tf.compat.v1.train.GradientDescentOptimizer(0.1)
        assert npu_distributed_optimizer_wrapper(optimizer) is optimizer and "compute_gradients" not in vars(optimizer)
        assert len(graph.get_operations()) == before


def test_one_rank_broadcast_hook_changes_nothing() -> None:
    with tf.Graph().as_default():
        v = tf.compat.v1.get_variable("v", initializer=[5.0])
        with tf.compat.v1.train.MonitoredTrainingSession(hooks=[NPUBroadcastGlobalVariablesHook(0, 0)]) as session:
            assert session.run(v).tolist() == [5.0]


def test_argument_errors_name_what_is_allowed() -> None:
    with tf.Graph().as_default():
        t = tf.constant([1.0])
        with pytest.raises(ValueError, match="reduction='mean': expected one of sum, max, min, prod"):
            hccl_ops.allreduce(t, "mean")
        with pytest.raises(ValueError, match="HCCL group 'g'"):
            hccl_ops.allreduce(t, "sum", group="g")
        with pytest.raises(ValueError, match=r"rank_size=8 but this job has 1 rank\(s\)"):
            hccl_ops.allgather(t, 8)


# ----------------------------------------------------------------------------- multi-rank graphs (built, not run)
@pytest.fixture()
def two_ranks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("RANK_SIZE", "2")
    monkeypatch.setenv("RANK_ID", "0")
    monkeypatch.setenv("HCCL_EXEC_TIMEOUT", "7")


def _collectives(graph: tf.Graph) -> list[tf.Operation]:
    return [op for op in graph.get_operations() if op.type.startswith("Collective")]


def test_gradients_are_packed_into_one_all_reduce_per_dtype_that_discovery_groups(two_ranks) -> None:
    with tf.Graph().as_default() as graph:
        features, labels = tf.compat.v1.data.make_one_shot_iterator(
            tf.data.Dataset.from_tensors((tf.ones([4, 3]), tf.ones([4, 1]))).repeat()).get_next()
        hidden = tf.compat.v1.layers.dense(features, 5, activation=tf.nn.relu)
        scale = tf.compat.v1.get_variable("scale", initializer=np.float64(1.0))
        prediction = tf.compat.v1.layers.dense(hidden, 1) * tf.cast(scale, tf.float32)
        loss = tf.reduce_mean(tf.square(prediction - labels))
        train_op = NPUDistributedOptimizer(tf.compat.v1.train.GradientDescentOptimizer(0.1)).minimize(
            loss, global_step=tf.compat.v1.train.get_or_create_global_step())
        reduces = _collectives(graph)
        assert sorted(op.get_attr("T").name for op in reduces) == ["float32", "float64"]  # 4 float32 grads, 1 float64
        for op in reduces:
            assert op.type == "CollectiveReduceV2"
            assert (op.get_attr("merge_op"), op.get_attr("final_op"), op.get_attr("timeout_seconds")) == (b"Add", b"Div", 7.0)
            assert tf.get_static_value(op.inputs[1]) == 2  # group_size
        points = find_trace_points(graph, train_op=train_op.name)
        assert {name for group in points.all_reduce for name in group} == {op.name for op in reduces}


def test_the_wrapper_averages_in_every_gradient_method_of_the_optimizer_object(two_ranks) -> None:
    with tf.Graph().as_default() as graph:
        w = tf.compat.v1.get_variable("w", [3])
        loss = tf.reduce_sum(w * w)
        v1 = tf.compat.v1.train.MomentumOptimizer(0.1, 0.9)
        assert npu_distributed_optimizer_wrapper(v1) is v1
        v1.compute_gradients(loss)
        keras = npu_distributed_optimizer_wrapper(tf.keras.optimizers.legacy.SGD(0.1))
        keras.get_gradients(loss, [w])
        assert npu_distributed_optimizer_wrapper(keras).get_gradients is keras.get_gradients  # wrapped once
        assert [op.type for op in _collectives(graph)] == ["CollectiveReduceV2"] * 2


def test_root_sends_and_the_others_receive(two_ranks, monkeypatch: pytest.MonkeyPatch) -> None:
    for rank, expected in (("0", "CollectiveBcastSendV2"), ("1", "CollectiveBcastRecvV2")):
        monkeypatch.setenv("RANK_ID", rank)
        with tf.Graph().as_default() as graph:
            a, b = tf.compat.v1.get_variable("a", [2, 3]), tf.compat.v1.get_variable("b", [4])
            tf.compat.v1.get_variable("flag", initializer=True, trainable=False)
            NPUBroadcastGlobalVariablesHook(0, int(rank)).begin()
            assert [(op.type, op.get_attr("T").name) for op in _collectives(graph)] == [(expected, "float32"), (expected, "int32")]
            assert hccl_ops.broadcast([a, b], 0)[0].shape == [2, 3]


def test_sparse_gradients_are_averaged_dense_and_strings_are_refused(two_ranks) -> None:
    with tf.Graph().as_default():
        sparse = tf.IndexedSlices(tf.ones([2, 3]), tf.constant([0, 4]), tf.constant([6, 3]))
        assert isinstance(allreduce(sparse), tf.Tensor)
        with pytest.raises(TypeError, match="carry numbers and bools; got string"):
            hccl_ops.allreduce(tf.constant(["a"]), "sum")
        with pytest.raises(ValueError, match="weight_update_sharding cannot be executed"):
            v = tf.compat.v1.get_variable("v", [1])
            NPUDistributedOptimizer(tf.compat.v1.train.GradientDescentOptimizer(0.1), True).compute_gradients(v * 2.0)


def test_gather_order_follows_tensorflows_task_name_order() -> None:
    peers = tuple(Peer(r, "worker", r, f"h:{r}") for r in range(12))
    order = hccl_ops.gather_order(RankSetup(0, 12, peers, "test", True))
    # members sorted as strings: task:0, task:1, task:10, task:11, task:2, ...
    assert order == [0, 1, 4, 5, 6, 7, 8, 9, 10, 11, 2, 3]
    assert hccl_ops.gather_order(RankSetup(0, 3, peers[:3], "test", True)) == [0, 1, 2]


# ----------------------------------------------------------------------------- failures
@pytest.fixture()
def peers_alive_and_dead():
    listening = socket.socket()
    listening.bind(("127.0.0.1", 0))
    listening.listen()
    closed = socket.socket()
    closed.bind(("127.0.0.1", 0))
    dead_port = closed.getsockname()[1]
    closed.close()
    me = Peer(0, "worker", 0, "127.0.0.1:1")
    alive = Peer(1, "worker", 1, f"127.0.0.1:{listening.getsockname()[1]}")
    dead = Peer(1, "worker", 1, f"127.0.0.1:{dead_port}")
    yield RankSetup(0, 2, (me, alive), "test", True), RankSetup(0, 2, (me, dead), "test", True)
    listening.close()


def test_rank_failures_name_the_rank_that_is_gone(peers_alive_and_dead) -> None:
    alive, dead = peers_alive_and_dead
    lost = session_join._rank_failure(tf.errors.UnavailableError(None, None, "Socket closed\nmore"), dead)
    assert isinstance(lost, session_join.RankFailureError)
    assert str(lost).startswith(f"rank 1 ({dead.peers[1].address}) is gone") and "TensorFlow said: Socket closed" in str(lost)
    assert session_join._rank_failure(tf.errors.UnavailableError(None, None, "x"), alive) is None
    stuck = session_join._rank_failure(tf.errors.DeadlineExceededError(None, None, "timed out"), alive)
    assert "longer than HCCL_EXEC_TIMEOUT=1836 s while every rank's server still answers" in str(stuck)


def test_watchdog_ends_a_run_stuck_past_the_timeout_when_a_rank_is_gone(peers_alive_and_dead, monkeypatch) -> None:
    alive, dead = peers_alive_and_dead
    monkeypatch.setenv("HCCL_EXEC_TIMEOUT", "0.2")
    exits: list[int] = []
    for setup, expected in ((alive, []), (dead, [EXIT_RANK_LOST])):
        watchdog = session_join._Watchdog(exit_process=exits.append, grace_s=0.0)
        token = watchdog.run_started()
        watchdog.start(setup)
        deadline = time.monotonic() + 30  # left as soon as the watchdog exits; long only on a loaded machine
        while not exits and time.monotonic() < deadline and expected:
            time.sleep(0.05)
        if not expected:
            time.sleep(0.5)  # several watch rounds: a stuck run with every rank alive is left to its collective
        watchdog.run_finished(token)
        watchdog.stop()
        assert exits == expected
