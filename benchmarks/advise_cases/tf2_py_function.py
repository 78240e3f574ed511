"""TF2 custom loop whose map calls numpy through tf.numpy_function. Fixed: the same maths in TensorFlow ops."""
import numpy as np
import tensorflow as tf

import npu_tf_profiling
from case_common import FIXED, timed_loop

npu_tf_profiling.start_tf2_profiling()
x = np.random.default_rng(0).random((64 * 80, 64), dtype=np.float32)


def numpy_augment(a):
    for _ in range(60):
        a = np.sin(a) + np.cos(a)
    return a


def augment(a):
    if FIXED:
        for _ in range(60):
            a = tf.sin(a) + tf.cos(a)
    else:
        a = tf.ensure_shape(tf.numpy_function(numpy_augment, [a], tf.float32), [64])  # advise: py_function
    return a, tf.reduce_sum(a, axis=-1, keepdims=True)


ds = tf.data.Dataset.from_tensor_slices(x).repeat().map(augment, num_parallel_calls=tf.data.AUTOTUNE)
ds = ds.batch(64).prefetch(tf.data.AUTOTUNE)
model = tf.keras.Sequential([tf.keras.layers.Dense(64, activation="relu"), tf.keras.layers.Dense(1)])
optimizer = tf.keras.optimizers.SGD(0.01)
it = iter(ds)


@tf.function
def step(iterator):
    a, b = next(iterator)
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean((model(a) - b) ** 2)
    optimizer.apply_gradients(zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables))


timed_loop(60, lambda i: step(it))
