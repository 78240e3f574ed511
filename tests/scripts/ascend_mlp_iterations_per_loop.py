# coding=utf-8
# A multi-layer perceptron in the style of ModelZoo-TensorFlow's migrated scripts: explicit
# npu_bridge.estimator.* imports, init_resource/npu_config_proto, a fixed loss scale, gelu from
# npu_unary_ops, and training-loop sinking with util.set_iteration_per_loop (the step loop is
# divided by iterations_per_loop, as on the NPU). It knows nothing about npu_tf_profiling.
import time

import numpy as np
import tensorflow as tf
from npu_bridge.npu_init import *
from npu_bridge.estimator import npu_ops
from npu_bridge.estimator.npu_unary_ops import npu_unary_ops
from npu_bridge.estimator.npu import util
from npu_bridge.estimator.npu import npu_scope
from npu_bridge.estimator.npu.npu_loss_scale_optimizer import NPULossScaleOptimizer
from npu_bridge.estimator.npu.npu_loss_scale_manager import FixedLossScaleManager
from npu_bridge.hccl import hccl_ops
from hccl.manage.api import get_rank_size

flags = tf.flags
flags.DEFINE_integer("training_steps", 20, "training steps in all")
flags.DEFINE_integer("iterations_per_loop", 5, "training steps per sess.run (loop sinking)")
flags.DEFINE_float("learning_rate", 0.05, "learning rate")
flags.DEFINE_integer("loss_scale", 1024, "fixed loss scale")
FLAGS = flags.FLAGS


def data():
    rng = np.random.RandomState(1)
    x = rng.normal(size=(64, 4)).astype(np.float32)
    y = np.eye(3, dtype=np.float32)[np.argmax(x[:, :3], axis=1)]
    return x, y


def model(x):
    weights = {"hidden": tf.get_variable("w_hidden", [4, 16]), "output": tf.get_variable("w_output", [16, 3])}
    bias = {"hidden": tf.get_variable("b_hidden", [16], initializer=tf.zeros_initializer()),
            "output": tf.get_variable("b_output", [3], initializer=tf.zeros_initializer())}
    layer1 = npu_unary_ops.gelu(tf.matmul(x, weights["hidden"]) + bias["hidden"])
    layer1 = npu_ops.dropout(layer1, keep_prob=0.9)
    return tf.matmul(layer1, weights["output"]) + bias["output"]


def main(_):
    (npu_sess, npu_shutdown) = init_resource()
    train_x, train_y = data()
    X = tf.placeholder(tf.float32, [None, 4])
    Y = tf.placeholder(tf.float32, [None, 3])
    pred = model(X)
    cost = tf.reduce_mean(tf.nn.softmax_cross_entropy_with_logits_v2(logits=pred, labels=Y))
    global_step = tf.train.get_or_create_global_step()
    ##################NPU modify start#####################
    optimizer = tf.train.GradientDescentOptimizer(FLAGS.learning_rate)
    optimizer = NPULossScaleOptimizer(optimizer, FixedLossScaleManager(FLAGS.loss_scale))
    train_op = optimizer.minimize(cost, global_step=global_step)
    with npu_scope.without_npu_compile_scope():
        accuracy = tf.reduce_mean(tf.cast(tf.equal(tf.argmax(pred, 1), tf.argmax(Y, 1)), tf.float32))
    ##################NPU modify end#######################
    init = tf.global_variables_initializer()
    if get_rank_size() > 1:
        broadcast = hccl_ops.broadcast(tf.trainable_variables(), root_rank=0)

    config = npu_config_proto(config_proto=tf.ConfigProto())
    with tf.Session(config=config) as sess:
        sess.run(init)
        train_loop = util.set_iteration_per_loop(sess, train_op, FLAGS.iterations_per_loop)
        loops = FLAGS.training_steps // FLAGS.iterations_per_loop
        start = time.time()
        for _ in range(loops):
            _, c = sess.run([train_loop, cost], feed_dict={X: train_x, Y: train_y})
        print("global_step: {} cost: {:.4f} accuracy: {:.3f} sec/step: {:.4f}".format(
            sess.run(global_step), c, sess.run(accuracy, feed_dict={X: train_x, Y: train_y}),
            (time.time() - start) / FLAGS.training_steps))
    shutdown_resource(npu_sess, npu_shutdown)
    close_session(npu_sess)


if __name__ == "__main__":
    tf.app.run()
