"""TF2 custom loop: a parallel map on each batch, no prefetch, and a step as long as the pipeline. Fixed:
.prefetch(AUTOTUNE). The step's small layers keep it on about one core, so the pipeline has the other one to run
ahead on once it may (with larger layers both sides use both cores here, and the fix measured -5 to -8%)."""
import numpy as np
import tensorflow as tf

import npu_tf_profiling
from case_common import FIXED, timed_loop

npu_tf_profiling.start_tf2_profiling()
x = np.random.default_rng(0).random((64 * 80, 64), dtype=np.float32)


def augment(a):
    for _ in range(200):
        a = tf.sin(a) + tf.cos(a)
    return a, tf.reduce_sum(a, axis=-1, keepdims=True)


ds = tf.data.Dataset.from_tensor_slices(x).repeat().batch(64)
ds = ds.map(augment, num_parallel_calls=tf.data.AUTOTUNE)  # advise: last
if FIXED:
    ds = ds.prefetch(tf.data.AUTOTUNE)
model = tf.keras.Sequential([tf.keras.layers.Dense(128, activation="relu") for _ in range(4)] + [tf.keras.layers.Dense(1)])
optimizer = tf.keras.optimizers.SGD(0.01)
it = iter(ds)


@tf.function
def step(iterator):
    a, b = next(iterator)
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean((model(a) - b) ** 2)
    optimizer.apply_gradients(zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables))


timed_loop(400, lambda i: step(it))  # long enough for process_cpu (info.json): > 1 s of records
