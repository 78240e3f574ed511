"""advise's TF1 case: a Session loop that runs a heavy evaluation with a second sess.run after every step."""
import numpy as np
import tensorflow as tf

import npu_tf_profiling  # noqa: F401 - attaches to the session (PROFILING_MODE/PROFILING_OPTIONS)

tf1 = tf.compat.v1
tf1.disable_eager_execution()
x = np.random.default_rng(0).random((640, 8), dtype=np.float32)
ds = tf1.data.Dataset.from_tensor_slices((x, x[:, :1])).repeat().batch(16)
features, labels = tf1.data.make_one_shot_iterator(ds).get_next()
w = tf1.get_variable("w", [8, 1])
loss = tf1.reduce_mean(tf1.square(tf1.matmul(features, w) - labels))
train = tf1.train.GradientDescentOptimizer(0.1).minimize(loss)
big = tf1.constant(np.random.default_rng(1).random((300, 300), dtype=np.float32))
heavy = big
for _ in range(12):
    heavy = tf1.tanh(tf1.matmul(heavy, big) / 300.0)
evaluation = tf1.reduce_sum(heavy) + tf1.reduce_sum(w)
with tf1.Session() as sess:
    sess.run(tf1.global_variables_initializer())
    for _ in range(30):
        sess.run(train)  # advise: train
        sess.run(evaluation)  # advise: evaluation
