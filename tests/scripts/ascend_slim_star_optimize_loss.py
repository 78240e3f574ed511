# coding=utf-8
# A contrib.layers classifier in the style of ModelZoo-TensorFlow's TF 1.15 scripts that star-import
# contrib.layers (convolution2d, fully_connected, flatten straight from the namespace) and train through
# tf.contrib.layers.optimize_loss, which reads ops.IndexedSlices inside tf-slim. sess.run with feed_dict.
from npu_bridge.npu_init import *
import argparse

import numpy as np
import tensorflow as tf
from tensorflow.contrib.layers import *


def build(images, labels):
    net = convolution2d(images, 4, [3, 3], scope="conv1")
    net = max_pool2d(net, [2, 2], scope="pool1")
    logits = fully_connected(flatten(net), 3, activation_fn=None, scope="logits")
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=labels, logits=logits))
    global_step = tf.train.get_or_create_global_step()
    train_op = optimize_loss(loss, global_step, learning_rate=0.05, optimizer="SGD",
                             clip_gradients=5.0, summaries=["loss"])
    return loss, train_op, global_step


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=20)
    args = parser.parse_args()
    images = tf.placeholder(tf.float32, [4, 8, 8, 1])
    labels = tf.placeholder(tf.int64, [4])
    loss, train_op, global_step = build(images, labels)
    rng = np.random.RandomState(0)
    with tf.Session(config=npu_config_proto()) as sess:
        sess.run(tf.global_variables_initializer())
        for _ in range(args.steps):
            feed = {images: rng.rand(4, 8, 8, 1), labels: rng.randint(0, 3, 4)}
            value, _ = sess.run([loss, train_op], feed_dict=feed)
        print("global_step: %d loss: %.4f" % (sess.run(global_step), value))


if __name__ == "__main__":
    main()
