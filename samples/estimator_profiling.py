"""Profile a real Estimator training job with NPURunConfig(profiling_config=...).

The script is written the way an Ascend (npu_bridge) user writes it; only the
import line differs. Run it with `make demo`, or:

    .venv/bin/python samples/estimator_profiling.py [--steps 60] [--output ./demo_output]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")

import numpy as np

from npu_tf_profiling.npu_init import *

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from show_results import print_profiling_result

FEATURES, CLASSES = 64, 10


def input_fn():
    """Synthetic but learnable data: the label is the argmax of a fixed projection of the features."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(4096, FEATURES)).astype(np.float32)
    y = np.argmax(x @ rng.normal(size=(FEATURES, CLASSES)), axis=1).astype(np.int32)
    return tf.data.Dataset.from_tensor_slices(({"x": x}, y)).shuffle(1024, seed=0).repeat().batch(64).prefetch(2)


def model_fn(features, labels, mode):
    net = features["x"]
    for i, width in enumerate((256, 256, 128)):
        net = tf.layers.dense(net, width, activation=tf.nn.relu, name=f"dense_{i}")
        net = tf.layers.batch_normalization(net, training=mode == tf.estimator.ModeKeys.TRAIN, name=f"bn_{i}")
    logits = tf.layers.dense(net, CLASSES, name="logits")
    loss = tf.losses.sparse_softmax_cross_entropy(labels=labels, logits=logits)
    if mode == tf.estimator.ModeKeys.EVAL:
        accuracy = tf.metrics.accuracy(labels, tf.argmax(logits, 1))
        return NPUEstimatorSpec(mode, loss=loss, eval_metric_ops={"accuracy": accuracy})
    update_bn = tf.get_collection(tf.GraphKeys.UPDATE_OPS)
    with tf.control_dependencies(update_bn):
        train_op = tf.train.AdamOptimizer(1e-3).minimize(loss, global_step=tf.train.get_or_create_global_step())
    return NPUEstimatorSpec(mode, loss=loss, train_op=train_op)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=60)
    parser.add_argument("--output", default="./demo_output", help="profiling output folder")
    args = parser.parse_args()

    profiling_options = json.dumps({"output": args.output, "training_trace": "on", "fp_point": "", "bp_point": "", "aic_metrics": "PipeUtilization"})
    profiling_config = ProfilingConfig(enable_profiling=True, profiling_options=profiling_options)
    session_config = tf.ConfigProto()
    model_dir = tempfile.mkdtemp(prefix="npu_tf_profiling_demo_model_")
    config = NPURunConfig(profiling_config=profiling_config, session_config=session_config, model_dir=model_dir, log_step_count_steps=None)

    from npu_tf_profiling.config import resolve_profiling

    print("== resolved profiling options (what the Estimator's sessions will use)")
    print(resolve_profiling(config.session_config).describe())

    estimator = NPUEstimator(model_fn=model_fn, config=config)
    estimator.train(input_fn=input_fn, steps=args.steps)
    print(f"== trained {args.steps} steps; evaluation: {estimator.evaluate(input_fn=input_fn, steps=5)}")

    return print_profiling_result(args.output)


if __name__ == "__main__":
    sys.exit(main())
