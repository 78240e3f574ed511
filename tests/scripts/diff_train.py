"""A tiny TF1 training on a tf.data generator, knowing nothing of profiling (for `npu-tf-prof diff`).

    PROFILING_MODE=true PROFILING_OPTIONS='{"output": DIR, "training_trace": "on"}' \
        python diff_train.py [--steps N] [--sleep-ms MS] [--layers L --width W]

``--sleep-ms`` puts a ``time.sleep`` in the input pipeline (the generator that
yields each batch; no prefetch), so every GetNext waits for it: the candidate
of the Data Aug Bound regression test. The model is the same either way.
"""
from __future__ import annotations

import argparse
import os
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--sleep-ms", type=float, default=0.0)
    parser.add_argument("--layers", type=int, default=1, help="hidden layers (1: a sub-ms step; 4 with --width 512: a few ms)")
    parser.add_argument("--width", type=int, default=64)
    args = parser.parse_args()

    import numpy as np
    import tensorflow.compat.v1 as tf

    tf.disable_eager_execution()
    rng = np.random.default_rng(0)
    x = rng.normal(size=(256, 16)).astype(np.float32)
    y = (x @ rng.normal(size=(16, 1))).astype(np.float32)
    pause = args.sleep_ms / 1000.0

    def batches():
        while True:
            for lo in range(0, len(x), 32):
                if pause:
                    time.sleep(pause)
                yield x[lo:lo + 32], y[lo:lo + 32]

    dataset = tf.data.Dataset.from_generator(batches, output_signature=(
        tf.TensorSpec((32, 16), tf.float32), tf.TensorSpec((32, 1), tf.float32)))
    features, target = tf.data.make_one_shot_iterator(dataset).get_next()
    hidden, width = features, 16
    for _ in range(args.layers):
        weights = tf.Variable(rng.normal(size=(width, args.width)).astype(np.float32) / np.sqrt(width))
        hidden, width = tf.nn.relu(tf.matmul(hidden, weights)), args.width
    loss = tf.losses.mean_squared_error(target, tf.matmul(hidden, tf.Variable(np.zeros((width, 1), np.float32))))
    train_op = tf.train.GradientDescentOptimizer(1e-2).minimize(loss, global_step=tf.train.get_or_create_global_step())
    with tf.Session() as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(args.steps):
            sess.run(train_op)


if __name__ == "__main__":
    main()
