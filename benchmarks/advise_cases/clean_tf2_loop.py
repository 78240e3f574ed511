"""Clean: a TF2 custom loop, compute-bound (a wide model), its pipeline parallel and prefetched."""
import numpy as np
import tensorflow as tf

import npu_tf_profiling
from case_common import timed_loop

npu_tf_profiling.start_tf2_profiling()
x = np.random.default_rng(0).random((256 * 20, 256), dtype=np.float32)
ds = tf.data.Dataset.from_tensor_slices(x).repeat().map(lambda a: a * 2.0, num_parallel_calls=tf.data.AUTOTUNE)
ds = ds.batch(256).prefetch(tf.data.AUTOTUNE)
model = tf.keras.Sequential([tf.keras.layers.Dense(2048, activation="relu"), tf.keras.layers.Dense(2048, activation="relu"),
                             tf.keras.layers.Dense(1)])
optimizer = tf.keras.optimizers.SGD(0.01)
it = iter(ds)


@tf.function
def step(iterator):
    a = next(iterator)
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean((model(a) - 1.0) ** 2)
    optimizer.apply_gradients(zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables))


timed_loop(40, lambda i: step(it))
