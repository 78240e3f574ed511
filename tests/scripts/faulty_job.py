"""A plain-Session training job that something goes wrong around, for the fault-matrix tests.

Usage: faulty_job.py STEPS FAULT [AT_STEP]
Profiling comes from the environment (PROFILING_MODE / PROFILING_OPTIONS); the
script never imports npu_tf_profiling. After step AT_STEP it does FAULT to the
profiling output itself, the way another process or an operator would:

    none              nothing
    delete_output     remove the whole output folder
    read_only         make the output folder and everything in it read-only
    finalize          (before any run) finalize the graph, as MonitoredSession does
    eager_functions   (before any run) tf.config.run_functions_eagerly(True)

Prints "step N" after each step and "done" at the end, flushed, so the caller
can follow it and signal it mid-run.
"""
import json
import os
import shutil
import stat
import sys
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np
import tensorflow.compat.v1 as tf

steps, fault = int(sys.argv[1]), sys.argv[2]
at_step = int(sys.argv[3]) if len(sys.argv) > 3 else 0
output = Path(json.loads(os.environ["PROFILING_OPTIONS"])["output"])


def make_read_only(root: Path) -> None:
    for folder, dirs, files in os.walk(root):
        for name in files:
            os.chmod(os.path.join(folder, name), stat.S_IRUSR | stat.S_IRGRP | stat.S_IROTH)
        os.chmod(folder, stat.S_IRUSR | stat.S_IXUSR | stat.S_IRGRP | stat.S_IXGRP | stat.S_IROTH | stat.S_IXOTH)


tf.disable_eager_execution()
if fault == "eager_functions":
    tf.config.run_functions_eagerly(True)
x = np.random.default_rng(0).normal(size=(256, 8)).astype(np.float32)
batch = tf.data.make_one_shot_iterator(tf.data.Dataset.from_tensor_slices(x).repeat().batch(16)).get_next()
w1 = tf.get_variable("w1", [8, 16], initializer=tf.glorot_uniform_initializer(seed=1))
w2 = tf.get_variable("w2", [16, 1], initializer=tf.glorot_uniform_initializer(seed=2))
loss = tf.reduce_mean(tf.matmul(tf.nn.relu(tf.matmul(batch, w1)), w2) ** 2)
train = tf.train.GradientDescentOptimizer(0.01).minimize(loss, global_step=tf.train.get_or_create_global_step())
init = tf.global_variables_initializer()
if fault == "finalize":
    tf.get_default_graph().finalize()
with tf.Session() as sess:
    sess.run(init)
    for step in range(1, steps + 1):
        value = sess.run([train, loss])[1]
        print(f"step {step} {value:.6f}", flush=True)
        if step == at_step and fault == "delete_output":
            shutil.rmtree(output)
        elif step == at_step and fault == "read_only":
            make_read_only(output)
print("done", flush=True)
