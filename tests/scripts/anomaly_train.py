"""Training with planted slow iterations, for the anomaly_capture and watch tests.

Usage: anomaly_train.py tf1|tf2 STEPS SPIKE REGIME_START REGIME_END [EVERY COUNT]   (env STEP_SLEEP_S: seconds to sleep per step;
SLOW_SLEEP_S: the planted iterations' sleep, default 0.4)

A small MLP; its step runs, under a `tf.cond` on the step number, a chain of
matmuls named ``slow_regime/...`` at iteration SPIKE and at iterations
REGIME_START..REGIME_END (inclusive): the planted slow stretch a capture must
name as what changed. With EVERY and COUNT the regime comes COUNT times, EVERY
iterations apart (the recall benchmark: benchmarks/anomaly_capture.py --recall). tf1: a plain Session keyed by the global step; tf2: a
tf.function step in a Python loop (its Iteration IDs are its call numbers).
Profiling comes from the environment. Prints one JSON line at the end:
{"weights": sha256 of the trained weights' bytes}.
"""
import hashlib
import json
import os
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np
import tensorflow as tf

mode, steps, spike, regime_start, regime_end = sys.argv[1], *map(int, sys.argv[2:6])
every, count = (int(sys.argv[6]), int(sys.argv[7])) if len(sys.argv) > 7 else (regime_end - regime_start + 1, 1)
pause = float(os.environ.get("STEP_SLEEP_S", "0"))
SLOW_SIZE, SLOW_CHAIN = 256, 4  # a few ms of matmuls
# and a sleep: far above this loaded host's noise (up to ~70 ms seen), at no CPU cost; env SLOW_SLEEP_S for shorter ones
SLOW_SLEEP_S = float(os.environ.get("SLOW_SLEEP_S", "0.4"))
x_data = np.random.default_rng(0).normal(size=(256, 8)).astype(np.float32)
slow_seed = np.random.default_rng(1).normal(size=(SLOW_SIZE, SLOW_SIZE)).astype(np.float32) / SLOW_SIZE


def _sleep(step):
    time.sleep(SLOW_SLEEP_S)
    return np.float32(0.0)


def slow_or_not(step, seed, v1):
    """About 0.0 (too small to change the loss), after the planted ops on the planted iterations (the step
    counts from 1): a sleep (`EagerPyFunc`) and a chain of matmuls. The chain starts from a variable
    (`seed`): from a constant, grappler would fold it away before the first run."""
    into = tf.cast(step, tf.int64) - regime_start  # iterations since the first regime began
    in_regime = tf.logical_and(tf.logical_and(into >= 0, into < every * count), into % every <= regime_end - regime_start)
    planted = tf.logical_or(tf.equal(step, spike), in_regime)

    def slow():
        with tf.name_scope("slow_regime"):
            m = seed
            for _ in range(SLOW_CHAIN):
                m = tf.matmul(m, m) + 1e-3
            slept = tf.py_function(_sleep, [step], tf.float32, name="sleep")
            return tf.reduce_sum(m) * 1e-30 + slept  # not * 0.0: grappler drops a product with zero, and the chain with it

    return v1.cond(planted, slow, lambda: tf.constant(0.0))


def digest(values) -> str:
    return hashlib.sha256(b"".join(np.asarray(v).tobytes() for v in values)).hexdigest()


if mode == "tf1":
    v1 = tf.compat.v1
    v1.disable_eager_execution()
    batch = v1.data.make_one_shot_iterator(tf.data.Dataset.from_tensor_slices(x_data).repeat().batch(16)).get_next()
    w1 = v1.get_variable("w1", [8, 16], initializer=v1.glorot_uniform_initializer(seed=1))
    w2 = v1.get_variable("w2", [16, 1], initializer=v1.glorot_uniform_initializer(seed=2))
    global_step = v1.train.get_or_create_global_step()
    seed = v1.get_variable("slow_seed", initializer=slow_seed, trainable=False)
    extra = slow_or_not(global_step + 1, seed, v1)
    # A product, not a sum: the gradient of a sum never reads `extra`, and the train op would not run it.
    loss = tf.reduce_mean(tf.matmul(tf.nn.relu(tf.matmul(batch, w1)), w2) ** 2) * (1.0 + extra)
    train = v1.train.GradientDescentOptimizer(0.01).minimize(loss, global_step=global_step)
    with v1.Session() as sess:
        sess.run(v1.global_variables_initializer())
        for _ in range(steps):
            sess.run(train)
            if pause:
                time.sleep(pause)
        weights = sess.run([w1, w2])
else:
    w1 = tf.Variable(tf.keras.initializers.GlorotUniform(seed=1)((8, 16)))
    w2 = tf.Variable(tf.keras.initializers.GlorotUniform(seed=2)((16, 1)))
    step_var = tf.Variable(0, dtype=tf.int64)
    seed = tf.Variable(slow_seed, trainable=False)
    iterator = iter(tf.data.Dataset.from_tensor_slices(x_data).repeat().batch(16))
    optimizer = tf.keras.optimizers.SGD(0.01)

    @tf.function
    def train_step():
        batch = next(iterator)
        step_var.assign_add(1)
        with tf.GradientTape() as tape:
            extra = slow_or_not(step_var, seed, tf.compat.v1)
            loss = tf.reduce_mean(tf.matmul(tf.nn.relu(tf.matmul(batch, w1)), w2) ** 2) * (1.0 + extra)
        optimizer.apply_gradients(zip(tape.gradient(loss, [w1, w2]), [w1, w2]))
        return loss

    for _ in range(steps):
        train_step()
        if pause:
            time.sleep(pause)
    weights = [w1.numpy(), w2.numpy()]
print(json.dumps({"weights": digest(weights)}), flush=True)
