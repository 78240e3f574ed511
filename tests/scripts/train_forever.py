"""A plain-Session training loop for the subprocess tests: prints each finished step, flushed.

Usage: train_forever.py STEPS [FSIZE_LIMIT_BYTES]     (env STEP_SLEEP_S: seconds to sleep per step)
Profiling comes from the environment (PROFILING_MODE / PROFILING_OPTIONS); the script
never imports npu_tf_profiling. With a file-size limit, writes beyond it fail with
EFBIG, which is how the disk-full test simulates a full disk for this process only.
"""
import os
import resource
import signal
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np
import tensorflow.compat.v1 as tf

steps = int(sys.argv[1])
if len(sys.argv) > 2:
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    limit = int(sys.argv[2])
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

tf.disable_eager_execution()
x = np.random.default_rng(0).normal(size=(256, 8)).astype(np.float32)
batch = tf.data.make_one_shot_iterator(tf.data.Dataset.from_tensor_slices(x).repeat().batch(16)).get_next()
w1 = tf.get_variable("w1", [8, 16], initializer=tf.glorot_uniform_initializer(seed=1))
w2 = tf.get_variable("w2", [16, 1], initializer=tf.glorot_uniform_initializer(seed=2))
loss = tf.reduce_mean(tf.matmul(tf.nn.relu(tf.matmul(batch, w1)), w2) ** 2)  # no tf.layers: runs on TF 2.16+ too
train = tf.train.GradientDescentOptimizer(0.01).minimize(loss, global_step=tf.train.get_or_create_global_step())
pause = float(os.environ.get("STEP_SLEEP_S", "0"))
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for step in range(1, steps + 1):
        sess.run(train)
        print(f"step {step}", flush=True)
        if pause:
            import time

            time.sleep(pause)
print("done", flush=True)
