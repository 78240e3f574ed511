# coding=utf-8
# A GCN-style sess.run script: the whole training set is fed as constant arrays each step
# (feed_dict, no input pipeline), and the model is evaluated on a larger validation set every
# --eval_every steps with its own sess.run, as ModelZoo's graph scripts do each epoch.
from npu_bridge.npu_init import *
import argparse

import numpy as np
import tensorflow as tf


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--eval_every", type=int, default=5)
    args = parser.parse_args()
    rng = np.random.RandomState(0)
    train_x, train_y = rng.rand(32, 16).astype(np.float32), rng.randint(0, 4, 32)
    val_x, val_y = rng.rand(20000, 16).astype(np.float32), rng.randint(0, 4, 20000)
    x = tf.placeholder(tf.float32, [None, 16])
    y = tf.placeholder(tf.int64, [None])
    hidden = x
    for i in range(4):
        hidden = tf.layers.dense(hidden, 256, activation=tf.nn.relu, name="dense%d" % i)
    logits = tf.layers.dense(hidden, 4, name="logits")
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
    accuracy = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(logits, 1), y), tf.float32))
    global_step = tf.train.get_or_create_global_step()
    train_op = tf.train.AdamOptimizer(0.01).minimize(loss, global_step=global_step)
    with tf.Session(config=npu_config_proto()) as sess:
        sess.run(tf.global_variables_initializer())
        for step in range(1, args.steps + 1):
            sess.run([train_op, loss], feed_dict={x: train_x, y: train_y})
            if step % args.eval_every == 0:
                val_loss, val_acc = sess.run([loss, accuracy], feed_dict={x: val_x, y: val_y})
                print("step %d val_loss %.4f val_acc %.3f" % (step, val_loss, val_acc))
        print("global_step: %d" % sess.run(global_step))


if __name__ == "__main__":
    main()
