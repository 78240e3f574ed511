"""Keras `model.fit` (TensorFlow 2, eager) with validation data: each epoch ends with a validation pass.

Profiling comes from the environment; the script never imports npu_tf_profiling.
"""
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np
import tensorflow as tf

rng = np.random.default_rng(0)
x, y = rng.normal(size=(64, 8)).astype("float32"), rng.normal(size=(64, 1)).astype("float32")
val_x, val_y = rng.normal(size=(48, 8)).astype("float32"), rng.normal(size=(48, 1)).astype("float32")
model = tf.keras.Sequential([tf.keras.layers.Dense(16, activation="relu", input_shape=(8,)), tf.keras.layers.Dense(1)])
model.compile(optimizer=tf.keras.optimizers.SGD(0.01), loss="mse")
model.fit(x, y, batch_size=16, epochs=2, validation_data=(val_x, val_y), validation_batch_size=16, verbose=0)
print("trained")
