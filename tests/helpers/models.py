"""Small real models the runtime tests train: fast on 2 CPU cores, but real TensorFlow graphs."""
from __future__ import annotations

import json

import numpy as np
import tensorflow.compat.v1 as tf

from npu_tf_profiling.config.session_proto import write_request

FEATURES = 16
CLASSES = 4


def dense(x, units: int, name: str, activation=None, seed: int | None = None):
    """A dense layer from tf.compat.v1 variables (tf.layers needs Keras 2, gone in TF 2.16+).

    Op names match tf.layers' (`<name>/MatMul`), so the tests read the same on every TF version.
    """
    with tf.variable_scope(name):
        kernel = tf.get_variable("kernel", [x.shape[-1], units], initializer=tf.glorot_uniform_initializer(seed=seed))
        bias = tf.get_variable("bias", [units], initializer=tf.zeros_initializer())
        out = tf.nn.bias_add(tf.matmul(x, kernel), bias)
    return activation(out) if activation is not None else out


def synthetic_data(n: int = 256, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """A learnable problem: the label is the argmax of a fixed projection of the features."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, FEATURES)).astype(np.float32)
    y = np.argmax(x @ rng.normal(size=(FEATURES, CLASSES)), axis=1).astype(np.int32)
    return x, y


def input_fn(batch: int = 32, sleep_s: float = 0.0):
    """A tf.data input_fn; `sleep_s` makes every batch slow (an input-bound pipeline, read only when asked for)."""

    def fn():
        x, y = synthetic_data()
        ds = tf.data.Dataset.from_tensor_slices(({"x": x}, y)).repeat().batch(batch)
        if sleep_s:
            import time

            def slow(features, labels):
                def wait(v):
                    time.sleep(sleep_s)
                    return v

                slowed = tf.py_function(wait, [features["x"]], tf.float32)
                slowed.set_shape(features["x"].shape)
                return {"x": slowed}, labels

            ds = ds.map(slow)
            # No background read-ahead: tf.data's injected prefetch and autotuning would read the next batch during
            # the step and the host's time between steps, so how much of the sleep shows in GetNext would depend on
            # the machine's load (a fresh-clone suite run at load 10-18 saw a 15 ms read for a 30 ms sleep).
            options = tf.data.Options()
            options.experimental_optimization.inject_prefetch = False
            options.autotune.enabled = False
            ds = ds.with_options(options)
        return ds

    return fn


def mlp_model_fn(features, labels, mode, params=None):
    """Two dense layers and SGD with a global step, the shape of a typical Estimator model."""
    hidden = dense(features["x"], 32, "dense", tf.nn.relu)
    logits = dense(hidden, CLASSES, "logits")
    if mode == tf.estimator.ModeKeys.PREDICT:
        return tf.estimator.EstimatorSpec(mode, predictions={"class": tf.argmax(logits, 1)})
    loss = tf.losses.sparse_softmax_cross_entropy(labels=labels, logits=logits)
    if mode == tf.estimator.ModeKeys.EVAL:
        return tf.estimator.EstimatorSpec(mode, loss=loss)
    train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=tf.train.get_or_create_global_step())
    return tf.estimator.EstimatorSpec(mode, loss=loss, train_op=train_op)


def session_mlp(graph: tf.Graph, batch: int = 32, sleep_s: float = 0.0, extra_flops: int = 0, seed: int = 1):
    """A plain-Session model on tf.data: returns (train_op, loss, init_op, summary_op).

    `extra_flops` adds matrix products to the forward pass (a slow model).
    """
    with graph.as_default():
        tf.set_random_seed(seed)
        features, labels = tf.data.make_one_shot_iterator(input_fn(batch, sleep_s)()).get_next()
        seeds = iter(range(seed * 1000, seed * 1000 + 1000))  # explicit seeds: bit-identical reruns
        hidden = dense(features["x"], 32, "dense", tf.nn.relu, next(seeds))
        for i in range(extra_flops):
            big = dense(hidden, 512, f"heavy_{i}", tf.nn.relu, next(seeds))
            hidden = dense(big, 32, f"heavy_back_{i}", seed=next(seeds))
        logits = dense(hidden, CLASSES, "logits", seed=next(seeds))
        loss = tf.losses.sparse_softmax_cross_entropy(labels=labels, logits=logits)
        train_op = tf.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=tf.train.get_or_create_global_step())
        summary = tf.summary.scalar("loss", loss)
        init = tf.global_variables_initializer()
    return train_op, loss, init, summary


def profiling_config(output, single_thread: bool = True, **extra) -> tf.ConfigProto:
    """A session ConfigProto asking for training_trace into `output` (NpuOptimizer path), plus `extra` options.

    `single_thread`: one inter-op and one intra-op thread, so step timings are reproducible.
    """
    config = tf.ConfigProto(inter_op_parallelism_threads=1, intra_op_parallelism_threads=1) if single_thread else tf.ConfigProto()
    write_request(config, True, json.dumps({"output": str(output), "training_trace": "on", **extra}))
    return config
