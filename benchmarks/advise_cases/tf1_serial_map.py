"""TF1 Session loop fed by a one-shot iterator over a serial map on each batch. Fixed: num_parallel_calls and prefetch.

The step's small layers leave the pipeline room to run ahead once it may. (A map of 25 sin/cos on each element,
before the batch, had the pipeline at about 5% of the step here, and the fix cost 23%: its threads' overhead.)"""
import numpy as np
import tensorflow as tf

import npu_tf_profiling  # noqa: F401
from case_common import FIXED, timed_loop

tf1 = tf.compat.v1
tf1.disable_eager_execution()
x = np.random.default_rng(0).random((64 * 80, 64), dtype=np.float32)


def augment(a):
    for _ in range(100):
        a = tf.sin(a) + tf.cos(a)
    return a, tf.reduce_sum(a, axis=-1, keepdims=True)


ds = tf1.data.Dataset.from_tensor_slices(x).repeat().batch(64)
ds = ds.map(augment, num_parallel_calls=tf.data.AUTOTUNE) if FIXED else ds.map(augment)  # advise: map
ds = ds.prefetch(tf.data.AUTOTUNE) if FIXED else ds
a, b = tf1.data.make_one_shot_iterator(ds).get_next()
hidden = a
for _ in range(4):
    hidden = tf1.layers.dense(hidden, 128, activation=tf.nn.relu)
loss = tf1.reduce_mean((tf1.layers.dense(hidden, 1) - b) ** 2)
train = tf1.train.GradientDescentOptimizer(0.01).minimize(loss)
with tf1.Session() as sess:
    sess.run(tf1.global_variables_initializer())
    timed_loop(400, lambda i: sess.run(train))  # long enough for process_cpu (info.json): > 1 s of records
