# coding=utf-8
# A feed_dict sess.run loop with two planted host causes between its steps, as user scripts have them:
# a numpy helper called after every step (its busy line is marked "planted numpy line"), and
# cyclic garbage that the script collects with gc.collect(1) (one forced collection per step).
from npu_bridge.npu_init import *
import argparse
import gc

import numpy as np
import tensorflow as tf


class Node(object):
    def __init__(self):
        self.partner = None


def make_cycles(count):
    for _ in range(count):
        a, b = Node(), Node()
        a.partner, b.partner = b, a


def numpy_helper(matrix):
    total = 0.0
    for _ in range(3):
        total += float(np.linalg.svd(matrix, compute_uv=False)[0])  # planted numpy line
    return total


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--cycles", type=int, default=20000)
    args = parser.parse_args()
    rng = np.random.RandomState(0)
    train_x, train_y = rng.rand(64, 16).astype(np.float32), rng.randint(0, 4, 64)
    matrix = rng.rand(160, 160)
    x = tf.placeholder(tf.float32, [None, 16])
    y = tf.placeholder(tf.int64, [None])
    hidden = tf.layers.dense(x, 64, activation=tf.nn.relu, name="dense0")
    logits = tf.layers.dense(hidden, 4, name="logits")
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
    global_step = tf.train.get_or_create_global_step()
    train_op = tf.train.AdamOptimizer(0.01).minimize(loss, global_step=global_step)
    with tf.Session(config=npu_config_proto()) as sess:
        sess.run(tf.global_variables_initializer())
        for step in range(1, args.steps + 1):
            _, step_loss = sess.run([train_op, loss], feed_dict={x: train_x, y: train_y})
            numpy_helper(matrix)
            make_cycles(args.cycles)
            gc.collect(1)  # the young generations, where the cycles are
        print("global_step: %d loss %.6f" % (sess.run(global_step), step_loss))


if __name__ == "__main__":
    main()
