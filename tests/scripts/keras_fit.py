"""Keras `model.fit` in graph mode (eager disabled): steps run through session callables, not `run`.

Profiling comes from the environment; the script never imports npu_tf_profiling.
Prints the losses so the caller can compare a profiled run with a plain one.
"""
import json
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np
import tensorflow as tf

tf.compat.v1.disable_eager_execution()
tf.compat.v1.set_random_seed(0)
rng = np.random.default_rng(0)
x = rng.normal(size=(64, 8)).astype("float32")
y = rng.normal(size=(64, 1)).astype("float32")
init = tf.keras.initializers.GlorotUniform(seed=1)
model = tf.keras.Sequential([
    tf.keras.layers.Dense(16, activation="relu", input_shape=(8,), kernel_initializer=init),
    tf.keras.layers.Dense(1, kernel_initializer=init),
])
model.compile(optimizer=tf.keras.optimizers.legacy.SGD(0.01), loss="mse")
history = model.fit(x, y, batch_size=16, epochs=2, shuffle=False, verbose=0)
print(json.dumps(history.history["loss"]))
