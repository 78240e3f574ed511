# coding=utf-8
# A LeNet training script written the way ModelZoo-TensorFlow's migrated TF 1.15 scripts are:
# star import of npu_init, the NpuOptimizer session config by hand, npu_ops.dropout,
# npu_tf_optimizer and dynamic loss scaling. It knows nothing about npu_tf_profiling.
from npu_bridge.npu_init import *
import argparse
import time

import numpy as np
import tensorflow as tf


def parse_args():
    parser = argparse.ArgumentParser(description="LeNet on synthetic 28x28 images")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--batch_size", type=int, default=16)
    parser.add_argument("--learning_rate", type=float, default=0.01)
    parser.add_argument("--loss_scale_value", type=int, default=0, help="0: dynamic loss scale, >=1: fixed")
    parser.add_argument("--precision_mode", default="allow_mix_precision")
    return parser.parse_args()


def input_data(batch_size):
    rng = np.random.RandomState(0)
    images = rng.rand(256, 28, 28, 1).astype(np.float32)
    labels = rng.randint(0, 10, size=256).astype(np.int64)
    dataset = tf.data.Dataset.from_tensor_slices((images, labels)).repeat().batch(batch_size, drop_remainder=True)
    return dataset.make_one_shot_iterator().get_next()


def lenet(images, is_training):
    net = tf.layers.conv2d(images, 6, 5, padding="same", activation=tf.nn.relu, name="conv1")
    net = tf.layers.max_pooling2d(net, 2, 2, name="pool1")
    net = tf.layers.conv2d(net, 16, 5, activation=tf.nn.relu, name="conv2")
    net = tf.layers.max_pooling2d(net, 2, 2, name="pool2")
    net = tf.layers.flatten(net)
    net = tf.layers.dense(net, 120, activation=tf.nn.relu, name="fc1")
    if is_training:
        net = npu_ops.dropout(net, keep_prob=0.8)
    net = tf.layers.dense(net, 84, activation=tf.nn.relu, name="fc2")
    return tf.layers.dense(net, 10, name="logits")


def main():
    args = parse_args()
    images, labels = input_data(args.batch_size)
    logits = lenet(images, is_training=True)
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))
    global_step = tf.train.get_or_create_global_step()

    ##################NPU modify start#####################
    optimizer = npu_tf_optimizer(tf.train.MomentumOptimizer(args.learning_rate, 0.9))
    if args.loss_scale_value == 0:
        loss_scale_manager = ExponentialUpdateLossScaleManager(init_loss_scale=2 ** 32, incr_every_n_steps=1000,
                                                               decr_every_n_nan_or_inf=2, decr_ratio=0.5)
    else:
        loss_scale_manager = FixedLossScaleManager(loss_scale=args.loss_scale_value)
    optimizer = NPULossScaleOptimizer(optimizer, loss_scale_manager)
    ##################NPU modify end#######################
    train_op = optimizer.minimize(loss, global_step=global_step)

    ##################NPU modify start#####################
    config = tf.ConfigProto()
    custom_op = config.graph_options.rewrite_options.custom_optimizers.add()
    custom_op.name = "NpuOptimizer"
    custom_op.parameter_map["use_off_line"].b = True
    custom_op.parameter_map["precision_mode"].s = tf.compat.as_bytes(args.precision_mode)
    config.graph_options.rewrite_options.remapping = RewriterConfig.OFF
    ##################NPU modify end#######################

    with tf.Session(config=config) as sess:
        sess.run(tf.global_variables_initializer())
        start = time.time()
        for step in range(args.steps):
            loss_value, _ = sess.run([loss, train_op])
        print("global_step: {} loss: {:.4f} loss_scale: {} sec/step: {:.4f}".format(
            sess.run(global_step), loss_value, sess.run(loss_scale_manager.get_loss_scale()), (time.time() - start) / args.steps))


if __name__ == "__main__":
    main()
