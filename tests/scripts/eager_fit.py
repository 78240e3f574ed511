"""Eager TensorFlow 2 training (Keras fit with tf.config.run_functions_eagerly(True)): no Session anywhere.

Profiling comes from the environment; the script never imports npu_tf_profiling.
"""
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np
import tensorflow as tf

tf.config.run_functions_eagerly(True)
rng = np.random.default_rng(0)
model = tf.keras.Sequential([tf.keras.layers.Dense(4, activation="relu", input_shape=(8,)), tf.keras.layers.Dense(1)])
model.compile(optimizer=tf.keras.optimizers.SGD(0.01), loss="mse")
model.fit(rng.normal(size=(64, 8)).astype("float32"), rng.normal(size=(64, 1)).astype("float32"), epochs=1, verbose=0)
print("done", flush=True)
