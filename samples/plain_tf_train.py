"""An ordinary TensorFlow 1.x-style training script that knows nothing about profiling.

`env_profiling.sh` profiles it through PROFILING_MODE / PROFILING_OPTIONS alone.
"""
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np
import tensorflow.compat.v1 as tf

tf.disable_eager_execution()
rng = np.random.default_rng(0)
x = rng.normal(size=(2048, 32)).astype(np.float32)
y = (x @ rng.normal(size=(32, 1))).astype(np.float32)
features, target = tf.data.make_one_shot_iterator(
    tf.data.Dataset.from_tensor_slices((x, y)).repeat().batch(64)
).get_next()
hidden = tf.layers.dense(features, 128, activation=tf.nn.relu)
prediction = tf.layers.dense(hidden, 1)
loss = tf.losses.mean_squared_error(target, prediction)
train_op = tf.train.AdamOptimizer(1e-3).minimize(loss, global_step=tf.train.get_or_create_global_step())
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    for _ in range(int(os.environ.get("STEPS", "50"))):
        _, value = sess.run([train_op, loss])
print(f"final loss {value:.4f}")
