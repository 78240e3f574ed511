"""The TensorFlow 2 benchmark models for overhead.py: eager TF2 training steps, each its own model and tf.function.

  tf2_fit_mlp    Keras `fit`'s own step (`model.make_train_function()` called on an iterator, as fit calls
                 it per step): 20 dense + batch-norm blocks, Adam, batch 64
  tf2_loop_mlp   the same model in a custom `tf.function` step with `next(iterator)` inside
  tf2_tiny       two small dense layers, SGD, batch 16, custom step (~0.3 ms: per-step costs show most)

Each builder returns a callable that runs one training step and waits for it, and the
step graph's op count. The step is traced by its first call, which the builder makes:
whether it is profiled is decided then, by the request in force (overhead.py switches it
with `start_tf2_profiling` per runner).
"""
from __future__ import annotations

from typing import Callable

import numpy as np
import tensorflow as tf

Step = Callable[[], None]


def _mlp() -> tf.keras.Model:
    layers: list = [tf.keras.Input((64,))]
    for _ in range(20):
        layers += [tf.keras.layers.Dense(64, activation="relu"), tf.keras.layers.BatchNormalization()]
    return tf.keras.Sequential(layers + [tf.keras.layers.Dense(1)])


def _data(rows: int, width: int, batch: int) -> tf.data.Dataset:
    features = np.random.default_rng(0).normal(size=(rows, width)).astype(np.float32)
    return tf.data.Dataset.from_tensor_slices((features, np.zeros((rows, 1), np.float32))).repeat().batch(batch)


def _custom_step(model: tf.keras.Model, optimizer: tf.keras.optimizers.Optimizer, dataset: tf.data.Dataset) -> tuple[Step, int]:
    iterator = iter(dataset)

    @tf.function
    def train_step() -> tf.Tensor:
        x, y = next(iterator)
        with tf.GradientTape() as tape:
            loss = tf.reduce_mean(tf.square(model(x, training=True) - y))
        optimizer.apply_gradients(zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables))
        return loss

    train_step().numpy()  # the trace (and the optimizer's variables)
    ops = len(train_step.get_concrete_function().graph.get_operations())
    return (lambda: train_step().numpy()), ops


def build_fit_mlp() -> tuple[Step, int]:
    tf.keras.utils.set_random_seed(0)
    model = _mlp()
    model.compile(optimizer=tf.keras.optimizers.Adam(1e-3), loss="mse")
    train_function = model.make_train_function()
    iterator = iter(_data(1024, 64, 64))
    train_function(iterator)["loss"].numpy()
    ops = len(train_function.get_concrete_function(iterator).graph.get_operations())
    return (lambda: train_function(iterator)["loss"].numpy()), ops


def build_loop_mlp() -> tuple[Step, int]:
    tf.keras.utils.set_random_seed(0)
    return _custom_step(_mlp(), tf.keras.optimizers.Adam(1e-3), _data(1024, 64, 64))


def build_tiny() -> tuple[Step, int]:
    tf.keras.utils.set_random_seed(0)
    model = tf.keras.Sequential([tf.keras.Input((8,)), tf.keras.layers.Dense(16, activation="relu"), tf.keras.layers.Dense(1)])
    return _custom_step(model, tf.keras.optimizers.SGD(0.01), _data(256, 8, 16))


TF2_BUILDERS = {"tf2_fit_mlp": build_fit_mlp, "tf2_loop_mlp": build_loop_mlp, "tf2_tiny": build_tiny}
TF2_STEPS_PER_VISIT = {"tf2_fit_mlp": 5, "tf2_loop_mlp": 5, "tf2_tiny": 20}
