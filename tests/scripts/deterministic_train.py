"""A plain-Session training loop under op determinism (`enable_op_determinism`), as reproducibility-minded scripts run.

Profiling comes from the environment; the script never imports npu_tf_profiling.
Prints the losses and the final weights' sum so the caller can compare a profiled run with a plain one.
"""
import json
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np
import tensorflow as tf

tf.config.experimental.enable_op_determinism()
v1 = tf.compat.v1
v1.disable_eager_execution()
v1.set_random_seed(0)
x = np.random.default_rng(0).normal(size=(256, 8)).astype(np.float32)
batch = v1.data.make_one_shot_iterator(tf.data.Dataset.from_tensor_slices(x).repeat().batch(16)).get_next()
w1 = v1.get_variable("w1", [8, 16], initializer=v1.glorot_uniform_initializer(seed=1))
w2 = v1.get_variable("w2", [16, 1], initializer=v1.glorot_uniform_initializer(seed=2))
loss = tf.reduce_mean(tf.matmul(tf.nn.relu(tf.matmul(batch, w1)), w2) ** 2)
train = v1.train.GradientDescentOptimizer(0.01).minimize(loss, global_step=v1.train.get_or_create_global_step())
with v1.Session() as sess:
    sess.run(v1.global_variables_initializer())
    losses = [float(sess.run([train, loss])[1]) for _ in range(12)]
    weights = float(sum(np.sum(v) for v in sess.run([w1, w2])))
print(json.dumps({"losses": losses, "weights": weights}))
