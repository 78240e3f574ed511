# coding=utf-8
# A slim classifier written the way ModelZoo-TensorFlow's TF 1.15 contrib-era scripts are:
# tf.contrib.slim with arg_scope and batch_norm, tf.contrib.layers initializers, an HParams
# overridden from a flag, a tf.contrib.data input pipeline, RANK_SIZE read at import (the
# Ascend launch scripts export it), npu_bridge's optimizer wrapper, and the model frozen at
# the end with graph_util. It knows nothing about npu_tf_profiling.
from npu_bridge.npu_init import *
import argparse
import os

import numpy as np
import tensorflow as tf
import tensorflow.contrib.slim as slim
from tensorflow.contrib import layers as contrib_layers
from tensorflow.python.framework import graph_util

RANK_SIZE = int(os.getenv("RANK_SIZE"))
RANK_ID = int(os.getenv("RANK_ID"))


def parse_args():
    parser = argparse.ArgumentParser(description="slim CNN on synthetic 16x16 images")
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--hparams", default="", help="comma-separated name=value overrides")
    return parser.parse_args()


def default_hparams():
    return tf.contrib.training.HParams(batch_size=8, learning_rate=0.05, filters=[8, 16], weight_decay=1e-4)


def input_fn(batch_size):
    rng = np.random.RandomState(RANK_ID)
    images = rng.rand(64, 16, 16, 3).astype(np.float32)
    labels = rng.randint(0, 5, size=64).astype(np.int64)
    dataset = tf.data.Dataset.from_tensor_slices((images, labels)).repeat()
    dataset = dataset.apply(tf.contrib.data.map_and_batch(lambda x, y: (x * 2.0 - 1.0, y), batch_size,
                                                          drop_remainder=True))
    return dataset.prefetch(tf.contrib.data.AUTOTUNE).make_one_shot_iterator().get_next()


def net(images, hparams, is_training):
    with slim.arg_scope([slim.conv2d, slim.fully_connected],
                        weights_initializer=contrib_layers.xavier_initializer(),
                        weights_regularizer=slim.l2_regularizer(hparams.weight_decay),
                        normalizer_fn=slim.batch_norm,
                        normalizer_params={"is_training": is_training, "decay": 0.9}):
        x = images
        for index, filters in enumerate(hparams.filters):
            x = slim.conv2d(x, filters, [3, 3], scope="conv%d" % (index + 1))
            x = slim.max_pool2d(x, [2, 2], scope="pool%d" % (index + 1))
        x = slim.flatten(x)
        return slim.fully_connected(x, 5, activation_fn=None, normalizer_fn=None, scope="logits")


def main():
    args = parse_args()
    hparams = default_hparams().parse(args.hparams)
    images, labels = input_fn(hparams.batch_size)
    logits = tf.identity(net(images, hparams, is_training=True), name="output")
    loss = tf.losses.sparse_softmax_cross_entropy(labels, logits) + tf.losses.get_regularization_loss()
    global_step = tf.train.get_or_create_global_step()
    optimizer = tf.train.MomentumOptimizer(hparams.learning_rate * RANK_SIZE, 0.9)
    optimizer = NPUDistributedOptimizer(optimizer)
    with tf.control_dependencies(tf.get_collection(tf.GraphKeys.UPDATE_OPS)):
        train_op = slim.learning.create_train_op(loss, optimizer, global_step=global_step)

    config = tf.ConfigProto()
    custom_op = config.graph_options.rewrite_options.custom_optimizers.add()
    custom_op.name = "NpuOptimizer"
    custom_op.parameter_map["use_off_line"].b = True
    with tf.Session(config=config) as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(args.steps):
            loss_value = sess.run(train_op)
        frozen = graph_util.convert_variables_to_constants(sess, sess.graph_def, ["output"])
        print("global_step: {} loss: {:.4f} frozen nodes: {} filters: {}".format(
            sess.run(global_step), loss_value, len(frozen.node), hparams.filters))


if __name__ == "__main__":
    main()
