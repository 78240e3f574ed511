"""The benchmark models, shared by overhead.py and getnext_floor.py: small real TF1-style training graphs on tf.data.

  mlp   20 dense + batch-norm blocks, Adam, batch 64 (about 4.6k ops; ~3 ms a step on 2 cores)
  cnn   3 conv layers, Momentum, batch 32 (~19 ms a step)
  tiny  two small dense layers, SGD, batch 16 (~0.3 ms a step: per-step costs show most here)

Each builder adds its model to `graph` and returns the train op (a v1 optimizer's
`minimize(global_step=...)`, as Estimator and most TF1 scripts have it).
"""
from __future__ import annotations

import numpy as np
import tensorflow.compat.v1 as tf


def build_mlp(graph: tf.Graph) -> tf.Operation:
    with graph.as_default():
        tf.set_random_seed(0)
        data = np.random.default_rng(0).normal(size=(1024, 64)).astype(np.float32)
        x = tf.data.make_one_shot_iterator(tf.data.Dataset.from_tensor_slices(data).repeat().batch(64)).get_next()
        net = x
        for i in range(20):
            net = tf.layers.dense(net, 64, activation=tf.nn.relu, name=f"dense_{i}")
            net = tf.layers.batch_normalization(net, training=True, name=f"bn_{i}")
        loss = tf.reduce_mean(tf.square(tf.layers.dense(net, 1, name="out")))
        with tf.control_dependencies(tf.get_collection(tf.GraphKeys.UPDATE_OPS)):
            return tf.train.AdamOptimizer(1e-3).minimize(loss, global_step=tf.train.get_or_create_global_step())


def build_cnn(graph: tf.Graph) -> tf.Operation:
    with graph.as_default():
        tf.set_random_seed(0)
        images = np.random.default_rng(0).normal(size=(256, 32, 32, 3)).astype(np.float32)
        x = tf.data.make_one_shot_iterator(tf.data.Dataset.from_tensor_slices(images).repeat().batch(32)).get_next()
        net = tf.layers.conv2d(x, 32, 3, padding="same", activation=tf.nn.relu, name="conv1")
        net = tf.layers.conv2d(net, 32, 3, padding="same", activation=tf.nn.relu, name="conv2")
        net = tf.layers.max_pooling2d(net, 2, 2)
        net = tf.layers.conv2d(net, 64, 3, padding="same", activation=tf.nn.relu, name="conv3")
        net = tf.layers.flatten(tf.layers.max_pooling2d(net, 2, 2))
        loss = tf.reduce_mean(tf.square(tf.layers.dense(net, 10, name="logits")))
        return tf.train.MomentumOptimizer(0.01, 0.9).minimize(loss, global_step=tf.train.get_or_create_global_step())


def build_tiny(graph: tf.Graph) -> tf.Operation:
    with graph.as_default():
        tf.set_random_seed(0)
        data = np.random.default_rng(0).normal(size=(256, 8)).astype(np.float32)
        x = tf.data.make_one_shot_iterator(tf.data.Dataset.from_tensor_slices(data).repeat().batch(16)).get_next()
        hidden = tf.layers.dense(x, 16, activation=tf.nn.relu, name="hidden")
        loss = tf.reduce_mean(tf.square(tf.layers.dense(hidden, 1, name="out")))
        return tf.train.GradientDescentOptimizer(0.01).minimize(loss, global_step=tf.train.get_or_create_global_step())


BUILDERS = {"mlp": build_mlp, "cnn": build_cnn, "tiny": build_tiny}
