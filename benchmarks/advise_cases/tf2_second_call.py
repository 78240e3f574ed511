"""TF2 custom loop that calls a second tf.function (a heavy metric) after every step. Fixed: every 100 steps."""
import numpy as np
import tensorflow as tf

import npu_tf_profiling
from case_common import FIXED, timed_loop

npu_tf_profiling.start_tf2_profiling()
x = np.random.default_rng(0).random((64 * 20, 64), dtype=np.float32)
ds = tf.data.Dataset.from_tensor_slices(x).repeat().batch(64).prefetch(tf.data.AUTOTUNE)
model = tf.keras.Sequential([tf.keras.layers.Dense(128, activation="relu"), tf.keras.layers.Dense(1)])
optimizer = tf.keras.optimizers.SGD(0.01)
big = tf.constant(np.random.default_rng(1).random((400, 400), dtype=np.float32))
it = iter(ds)


@tf.function
def step(iterator):
    a = next(iterator)
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean((model(a) - 1.0) ** 2)
    optimizer.apply_gradients(zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables))


@tf.function
def metric():
    m = big
    for _ in range(8):
        m = tf.tanh(tf.matmul(m, big) / 400.0)
    return tf.reduce_sum(m)


def one_step(i):
    step(it)
    if not FIXED or i % 100 == 0:
        metric()  # advise: metric


timed_loop(60, one_step)
