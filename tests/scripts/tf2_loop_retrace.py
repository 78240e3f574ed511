"""A TensorFlow 2 custom loop whose partial last batch retraces its step, with one long validation call.

Usage: tf2_loop_retrace.py EPOCHS

`for x, y in dataset:` a `tf.function` step given each batch: 100 examples in batches of 16, so each epoch
ends with a batch of 4, and the first such batch traces the step anew (its calls after that reuse the trace).
After the epoch's 3rd step of epoch 2, one validation call (a `tf.function` that is not a step, sleeping
VALIDATION_S in the host) makes one gap long among short ones. Profiling comes from the environment.
Prints one JSON line: {"steps", "retrace_after": the step count before the partial batch's first call}.
"""
import json
import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np
import tensorflow as tf

VALIDATION_S = 0.08
epochs = int(sys.argv[1])
tf.keras.utils.set_random_seed(7)
rng = np.random.default_rng(0)
features = rng.normal(size=(100, 8)).astype(np.float32)
labels = (features @ rng.normal(size=(8, 1))).astype(np.float32)
dataset = tf.data.Dataset.from_tensor_slices((features, labels)).batch(16)
model = tf.keras.Sequential([tf.keras.Input((8,)), tf.keras.layers.Dense(16, activation="relu"), tf.keras.layers.Dense(1)])
optimizer = tf.keras.optimizers.SGD(0.01)


@tf.function
def train_step(x, y):
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean((model(x, training=True) - y) ** 2)
    optimizer.apply_gradients(zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables))
    return loss


@tf.function
def validate(x):
    slept = tf.numpy_function(lambda: np.float32(time.sleep(VALIDATION_S) or 0.0), [], tf.float32)
    return tf.reduce_mean(model(x)) + slept


steps, retrace_after = 0, None
for epoch in range(epochs):
    for k, (x, y) in enumerate(dataset):
        if retrace_after is None and x.shape[0] != 16:
            retrace_after = steps
        train_step(x, y)
        steps += 1
        if epoch == 1 and k == 2:
            validate(features[:16])
print(json.dumps({"steps": steps, "retrace_after": retrace_after}))
