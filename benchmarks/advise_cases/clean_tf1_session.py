"""Clean: a TF1 Session loop, compute-bound, its pipeline parallel and prefetched, one run per step."""
import numpy as np
import tensorflow as tf

import npu_tf_profiling  # noqa: F401
from case_common import timed_loop

tf1 = tf.compat.v1
tf1.disable_eager_execution()
x = np.random.default_rng(0).random((256 * 20, 256), dtype=np.float32)
ds = tf1.data.Dataset.from_tensor_slices(x).repeat().map(lambda a: a * 2.0, num_parallel_calls=tf.data.AUTOTUNE)
a = tf1.data.make_one_shot_iterator(ds.batch(256).prefetch(tf.data.AUTOTUNE)).get_next()
hidden = tf1.layers.dense(tf1.layers.dense(a, 2048, activation=tf.nn.relu), 2048, activation=tf.nn.relu)
loss = tf1.reduce_mean((tf1.layers.dense(hidden, 1) - 1.0) ** 2)
train = tf1.train.GradientDescentOptimizer(0.01).minimize(loss)
with tf1.Session() as sess:
    sess.run(tf1.global_variables_initializer())
    timed_loop(40, lambda i: sess.run(train))
