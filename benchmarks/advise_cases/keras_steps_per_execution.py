"""Keras fit of a small model, one step per call. Fixed: compile(steps_per_execution=32)."""
import time

import numpy as np
import tensorflow as tf

import npu_tf_profiling
from case_common import report, FIXED

npu_tf_profiling.start_tf2_profiling()
STEPS, WARM_CALLS = 320, 1
x = np.random.default_rng(0).random((32 * STEPS, 16), dtype=np.float32)
ds = tf.data.Dataset.from_tensor_slices((x, x[:, :1])).batch(32).prefetch(tf.data.AUTOTUNE)
model = tf.keras.Sequential([tf.keras.layers.Dense(16, activation="relu"), tf.keras.layers.Dense(1)])
model.compile("sgd", "mse", steps_per_execution=32 if FIXED else 1)  # advise: compile


class Times(tf.keras.callbacks.Callback):
    def on_train_batch_end(self, batch, logs=None):
        marks.append((batch, time.perf_counter(), time.process_time()))


marks = []
model.fit(ds, epochs=1, verbose=0, callbacks=[Times()])
(b0, w0, c0), (b1, w1, c1) = marks[WARM_CALLS], marks[-1]
report((w1 - w0) / (b1 - b0), (c1 - c0) / (b1 - b0))
