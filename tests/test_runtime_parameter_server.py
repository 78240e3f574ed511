"""A worker's graph in parameter-server training: its variables, the global step included, live on another task.

Real servers (a ps task and a worker task in this process) and `replica_device_setter`,
as TF1 scripts build them.
"""
from __future__ import annotations

import json

import tensorflow.compat.v1 as tf

from npu_tf_profiling.raw_format.layout import PROBE_SCOPE
from tests.helpers.models import dense, profiling_config
from tests.helpers.multi_worker_jobs import SAMPLE
from tests.helpers.trace_files import only_prof_dir, raw_records


def _task(op: tf.Operation) -> str:
    """The job an op runs on: a resource op runs where its resource lives (the placer colocates them)."""
    resource = next((t.op for t in op.inputs if t.dtype == tf.resource), None)
    return tf.DeviceSpec.from_string((resource or op).device or "").job or ""


def test_no_op_of_the_parameter_server_waits_on_a_probe(tmp_path) -> None:
    """The probes run on the worker. A variable read or update on the ps task that waited on a stamp
    would wait on a message from the worker, an RPC on the step's path: those ops are left unwired
    (and named in a note), the train op (the step's increment, on the ps) included. Every
    iteration is still recorded, with its step."""
    ps_port, worker_port = SAMPLE.free_ports(2)
    cluster = tf.train.ClusterSpec({"ps": [f"localhost:{ps_port}"], "worker": [f"localhost:{worker_port}"]})
    tf.distribute.Server(cluster, job_name="ps", task_index=0)
    worker = tf.distribute.Server(cluster, job_name="worker", task_index=0)
    graph = tf.Graph()
    with graph.as_default(), tf.device(tf.train.replica_device_setter(worker_device="/job:worker/task:0", cluster=cluster)):
        x = tf.data.make_one_shot_iterator(tf.data.Dataset.from_tensors([[1.0, 2.0]]).repeat()).get_next()
        loss = tf.reduce_mean(tf.square(dense(dense(x, 4, "hidden", tf.nn.relu, seed=1), 3, "out", seed=2)))
        train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=tf.train.get_or_create_global_step())
        init = tf.global_variables_initializer()
    with tf.Session(worker.target, graph=graph, config=profiling_config(tmp_path, single_thread=False)) as sess:
        sess.run(init)
        for _ in range(5):
            sess.run(train_op)

    waiting = {
        op.name: _task(op)
        for op in graph.get_operations()
        if not op.name.startswith(PROBE_SCOPE) and any(c.name.startswith(PROBE_SCOPE) for c in op.control_inputs)
    }
    assert waiting and set(waiting.values()) == {"worker"}, waiting  # IteratorGetNext waits on its start stamp
    assert _task(train_op) == "ps" and train_op.name not in waiting
    assert [(r["run"], r["step"]) for r in raw_records(tmp_path)] == [(i, i) for i in range(1, 6)]
    notes = json.loads(next(only_prof_dir(tmp_path).glob("device_*/info.json")).read_text()).get("notes", [])
    assert any("could not be wired into" in n and "an op of another task" in n for n in notes), notes
