"""TF1 Session loop that runs and writes a histogram summary after every step. Fixed: every 100 steps."""
import tempfile

import numpy as np
import tensorflow as tf

import npu_tf_profiling  # noqa: F401
from case_common import FIXED, timed_loop

tf1 = tf.compat.v1
tf1.disable_eager_execution()
x = np.random.default_rng(0).random((64 * 20, 64), dtype=np.float32)
a = tf1.data.make_one_shot_iterator(tf1.data.Dataset.from_tensor_slices(x).repeat().batch(64)).get_next()
hidden = tf1.layers.dense(a, 128, activation=tf.nn.relu)
loss = tf1.reduce_mean((tf1.layers.dense(hidden, 1) - 1.0) ** 2)
train = tf1.train.GradientDescentOptimizer(0.01).minimize(loss)
big = tf1.constant(np.random.default_rng(1).random((400, 400), dtype=np.float32))
m = big
for _ in range(6):
    m = tf1.tanh(tf1.matmul(m, big) / 400.0)
summary = tf1.summary.merge([tf1.summary.histogram("activations", m)])
writer = tf1.summary.FileWriter(tempfile.mkdtemp())


def one_step(i):
    sess.run(train)
    if not FIXED or i % 100 == 0:  # fixed: 4 of the 400 timed steps
        writer.add_summary(sess.run(summary), i)  # advise: summaries


with tf1.Session() as sess:
    sess.run(tf1.global_variables_initializer())
    timed_loop(400, one_step)  # 60 steps (~60 ms) measured -11 to +55% in one set: any hiccup decided it
