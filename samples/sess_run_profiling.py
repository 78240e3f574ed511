"""Profile a plain `tf.Session` training loop through the NpuOptimizer custom optimizer.

Written as an Ascend sess.run script is; only the import line differs. Trains a
small CNN on synthetic images fed by tf.data:

    .venv/bin/python samples/sess_run_profiling.py [--steps 50] [--output ./demo_output]
"""
from __future__ import annotations

import argparse
import json
import os
import sys

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np

from npu_tf_profiling.npu_init import *

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from show_results import print_profiling_result


def build_model():
    rng = np.random.default_rng(0)
    images = rng.normal(size=(512, 28, 28, 1)).astype(np.float32)
    labels = (images.mean(axis=(1, 2, 3)) > 0).astype(np.int32)
    dataset = tf.data.Dataset.from_tensor_slices((images, labels)).shuffle(512, seed=0).repeat().batch(32).prefetch(2)
    x, y = tf.data.make_one_shot_iterator(dataset).get_next()
    net = tf.layers.conv2d(x, 16, 3, activation=tf.nn.relu, name="conv1")
    net = tf.layers.max_pooling2d(net, 2, 2)
    net = tf.layers.conv2d(net, 32, 3, activation=tf.nn.relu, name="conv2")
    net = tf.layers.flatten(net)
    logits = tf.layers.dense(net, 2, name="logits")
    loss = tf.losses.sparse_softmax_cross_entropy(labels=y, logits=logits)
    train_op = tf.train.MomentumOptimizer(0.01, 0.9).minimize(loss, global_step=tf.train.get_or_create_global_step())
    return train_op, loss


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=50)
    parser.add_argument("--output", default="./demo_output")
    args = parser.parse_args()
    tf.disable_eager_execution()
    train_op, loss = build_model()

    config = tf.ConfigProto()
    custom_op = config.graph_options.rewrite_options.custom_optimizers.add()
    custom_op.name = "NpuOptimizer"
    custom_op.parameter_map["use_off_line"].b = True
    custom_op.parameter_map["profiling_mode"].b = True
    custom_op.parameter_map["profiling_options"].s = tf.compat.as_bytes(
        json.dumps({"output": args.output, "training_trace": "on", "fp_point": "", "bp_point": ""})
    )
    config.graph_options.rewrite_options.remapping = RewriterConfig.OFF
    config.graph_options.rewrite_options.memory_optimization = RewriterConfig.OFF

    with tf.Session(config=config) as sess:
        sess.run(tf.global_variables_initializer())
        for step in range(args.steps):
            _, value = sess.run([train_op, loss])
        print(f"== trained {args.steps} steps, final loss {value:.4f}")
    return print_profiling_result(args.output)


if __name__ == "__main__":
    sys.exit(main())
