# coding=utf-8
# A feed_dict sess.run loop with two planted host causes between its steps, as user scripts have them:
# a numpy helper called after every step (its busy line is marked "planted numpy line"), and a ring of
# objects (cyclic garbage) made every step, which the script collects with gc.collect() every --gc_every steps.
from npu_bridge.npu_init import *
import argparse
import gc

import numpy as np
import tensorflow as tf


class Node(object):
    def __init__(self, previous):
        self.previous = previous


def make_ring(count):
    first = node = Node(None)
    for _ in range(count):
        node = Node(node)
    first.previous = node


def numpy_helper(matrix):
    total = 0.0
    for _ in range(3):
        total += float(np.linalg.svd(matrix, compute_uv=False)[0])  # planted numpy line
    return total


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--gc_every", type=int, default=4)
    args = parser.parse_args()
    rng = np.random.RandomState(0)
    train_x, train_y = rng.rand(64, 16).astype(np.float32), rng.randint(0, 4, 64)
    matrix = rng.rand(300, 300)
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
            make_ring(20000)
            if step % args.gc_every == 0:
                gc.collect()
        print("global_step: %d loss %.6f" % (sess.run(global_step), step_loss))


if __name__ == "__main__":
    main()
