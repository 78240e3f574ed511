# coding=utf-8
# A TensorFlow 2 custom training loop with a planted host cause between its steps: a numpy helper
# called after every step (its busy line is marked "planted numpy line"), or, with --map_no_prefetch,
# none in Python at all: the step reads a tf.data pipeline whose parallel map has no prefetch, so the
# map's ops hold the executor's threads and each step call starts its first op late. Profiling comes
# from the environment (PROFILING_MODE / PROFILING_OPTIONS), as an unmodified script gets it.
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
    parser.add_argument("--map_no_prefetch", action="store_true")
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

    if args.map_no_prefetch:
        iterator = iter(input_pipeline(rng))

        @tf.function
        def pipeline_step(batches):
            features, labels = next(batches)
            return train_step(features, labels)

        for _ in range(args.steps):
            loss = pipeline_step(iterator)  # step call line
    else:
        for _ in range(args.steps):
            loss = train_step(x, y)
            numpy_helper(matrix)
    print("loss %.6f" % float(loss))


def input_pipeline(rng):
    def augment(features):
        for _ in range(100):
            features = tf.sin(features) + tf.cos(features)
        return features, tf.cast(tf.reduce_sum(features, axis=-1) > 8.0, tf.int64)

    features = rng.rand(64 * 40, 16).astype(np.float32)
    return tf.data.Dataset.from_tensor_slices(features).repeat().batch(64).map(augment, num_parallel_calls=tf.data.AUTOTUNE)


if __name__ == "__main__":
    main()
