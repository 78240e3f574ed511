"""A long plain-Session loop of tiny steps (argv[1] of them), as a long production job looks to the profiler.

Profiling comes from the environment; the script never imports npu_tf_profiling. The last line
printed is JSON: the steps run, the wall clock (time.time) when the loop ended, and the process's peak
RSS (KiB) and CPU seconds then, so a caller can tell what the process's exit cost on top of the loop.
"""
import json
import os
import resource
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np
import tensorflow as tf

steps = int(sys.argv[1])
v1 = tf.compat.v1
v1.disable_eager_execution()
x = np.random.default_rng(0).normal(size=(64, 4)).astype(np.float32)
batch = v1.data.make_one_shot_iterator(tf.data.Dataset.from_tensor_slices(x).repeat().batch(8)).get_next()
w = v1.get_variable("w", [4, 1], initializer=v1.zeros_initializer())
loss = tf.reduce_mean(tf.matmul(batch, w) ** 2)
train = v1.train.GradientDescentOptimizer(0.01).minimize(loss)
with v1.Session() as sess:
    sess.run(v1.global_variables_initializer())
    for _ in range(steps):
        sess.run(train)
    loop_end = time.time()
    usage = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"steps": steps, "loop_end": loop_end, "peak_rss_kib": usage.ru_maxrss, "cpu_s": usage.ru_utime + usage.ru_stime}))
