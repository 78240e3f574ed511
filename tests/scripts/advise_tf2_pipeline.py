"""advise's TF2 case: a Keras fit fed by a slow serial map (one with a numpy_function), no prefetch,
compiled with one step per call. Profiled by PROFILING_MODE/PROFILING_OPTIONS (the test sets them)."""
import numpy as np
import tensorflow as tf

import npu_tf_profiling

npu_tf_profiling.start_tf2_profiling()
x = np.random.default_rng(0).random((1536, 16), dtype=np.float32)
y = x.sum(axis=1, keepdims=True)


def slow(a, b):
    for _ in range(40):
        a = tf.sin(a) + tf.cos(a)
    return a, b


ds = tf.data.Dataset.from_tensor_slices((x, y))
ds = ds.map(slow)  # advise: map
ds = ds.map(lambda a, b: (tf.ensure_shape(tf.numpy_function(np.tanh, [a], tf.float32), [16]), b))  # advise: py_function
ds = ds.batch(64)  # advise: last
model = tf.keras.Sequential([tf.keras.layers.Dense(8), tf.keras.layers.Dense(1)])
model.compile("sgd", "mse")  # advise: compile
model.fit(ds, epochs=1, verbose=0)
