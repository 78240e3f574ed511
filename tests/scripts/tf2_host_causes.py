# coding=utf-8
# A TensorFlow 2 custom training loop with a planted host cause between its steps: a numpy helper
# called after every step (its busy line is marked "planted numpy line"). Profiling comes from the
# environment (PROFILING_MODE / PROFILING_OPTIONS), as an unmodified script gets it.
import argparse
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np
import tensorflow as tf


def numpy_helper(matrix):
    total = 0.0
    for _ in range(3):
        total += float(np.linalg.svd(matrix, compute_uv=False)[0])  # planted numpy line
    return total


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=12)
    args = parser.parse_args()
    rng = np.random.RandomState(0)
    x, y = rng.rand(64, 16).astype(np.float32), rng.randint(0, 4, 64)
    matrix = rng.rand(300, 300)
    model = tf.keras.Sequential([tf.keras.layers.Dense(64, activation="relu"), tf.keras.layers.Dense(4)])
    optimizer = tf.keras.optimizers.SGD(0.01)
    loss_fn = tf.keras.losses.SparseCategoricalCrossentropy(from_logits=True)

    @tf.function
    def train_step(features, labels):
        with tf.GradientTape() as tape:
            loss = loss_fn(labels, model(features, training=True))
        optimizer.apply_gradients(zip(tape.gradient(loss, model.trainable_variables), model.trainable_variables))
        return loss

    for _ in range(args.steps):
        loss = train_step(x, y)
        numpy_helper(matrix)
    print("loss %.6f" % float(loss))


if __name__ == "__main__":
    main()
