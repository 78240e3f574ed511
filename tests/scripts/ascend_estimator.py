# coding=utf-8
# An Estimator training script in the style of ModelZoo-TensorFlow's migrated scripts:
# NPURunConfig/NPUEstimator/NPUEstimatorSpec from npu_bridge.estimator.npu.*, the loss-scale
# modules imported as lsm_lib/lso, NPUDistributedOptimizer, npu_hooks_append and tf.app flags.
# It knows nothing about npu_tf_profiling.
from npu_bridge.npu_init import *
import numpy as np
import tensorflow as tf
from npu_bridge.estimator.npu.npu_config import NPURunConfig
from npu_bridge.estimator.npu.npu_estimator import NPUEstimator, NPUEstimatorSpec
from npu_bridge.estimator.npu.npu_optimizer import NPUDistributedOptimizer
from npu_bridge.estimator.npu import npu_loss_scale_manager as lsm_lib
from npu_bridge.estimator.npu import npu_loss_scale_optimizer as lso

flags = tf.app.flags
flags.DEFINE_string("model_dir", "./model_dir", "checkpoints")
flags.DEFINE_integer("train_steps", 16, "max training steps")
flags.DEFINE_integer("batch_size", 32, "batch size")
flags.DEFINE_float("learning_rate", 0.001, "learning rate")
FLAGS = flags.FLAGS


def input_fn():
    rng = np.random.RandomState(2)
    features = rng.normal(size=(512, 8)).astype(np.float32)
    labels = (features.sum(axis=1) > 0).astype(np.int32)
    dataset = tf.data.Dataset.from_tensor_slices(({"x": features}, labels))
    return dataset.shuffle(512, seed=3).repeat().batch(FLAGS.batch_size, drop_remainder=True)


def model_fn(features, labels, mode, params):
    net = tf.layers.dense(features["x"], 32, activation=tf.nn.relu, name="hidden")
    logits = tf.layers.dense(net, 2, name="logits")
    loss = tf.losses.sparse_softmax_cross_entropy(labels=labels, logits=logits)
    if mode == tf.estimator.ModeKeys.TRAIN:
        optimizer = NPUDistributedOptimizer(tf.train.AdamOptimizer(FLAGS.learning_rate))
        loss_scale_manager = lsm_lib.ExponentialUpdateLossScaleManager(
            init_loss_scale=2 ** 16, incr_every_n_steps=1000, decr_every_n_nan_or_inf=2, decr_ratio=0.5)
        optimizer = lso.NPULossScaleOptimizer(optimizer, loss_scale_manager, is_distributed=False)
        train_op = optimizer.minimize(loss, global_step=tf.train.get_or_create_global_step())
        return NPUEstimatorSpec(mode=mode, loss=loss, train_op=train_op)
    accuracy = tf.metrics.accuracy(labels=labels, predictions=tf.argmax(logits, axis=1))
    return NPUEstimatorSpec(mode=mode, loss=loss, eval_metric_ops={"accuracy": accuracy})


def main(_):
    session_config = tf.ConfigProto(allow_soft_placement=True)
    run_config = NPURunConfig(model_dir=FLAGS.model_dir, save_checkpoints_steps=FLAGS.train_steps,
                              session_config=session_config, iterations_per_loop=1, log_step_count_steps=8)
    estimator = NPUEstimator(model_fn=model_fn, config=run_config)
    estimator.train(input_fn=input_fn, max_steps=FLAGS.train_steps, hooks=npu_hooks_append())
    print("global_step:", estimator.get_variable_value("global_step"))


if __name__ == "__main__":
    tf.app.run()
