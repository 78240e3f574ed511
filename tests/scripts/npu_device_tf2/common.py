# Shared by the two TF2 test scripts: flags as ModelZoo scripts take them, data, and the NPU options block.
import argparse
import hashlib
import json

import numpy as np
import tensorflow as tf

import npu_device


def parse_args():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=8)
    parser.add_argument("--batch_size", type=int, default=16)
    parser.add_argument("--profiling", default="False")
    parser.add_argument("--profiling_dump_path", default="/tmp/profiling")
    parser.add_argument("--fp_point", default="")
    parser.add_argument("--precision_mode", default="allow_mix_precision")
    parser.add_argument("--seed_by_rank", action="store_true", help="each rank starts from its own weights")
    return parser.parse_args()


def npu_config(args):
    npu_device.global_options().precision_mode = args.precision_mode
    npu_device.global_options().modify_mixlist = "./ops_info.json"
    npu_device.global_options().fusion_switch_file = "./fusion_switch.cfg"
    npu_device.global_options().auto_tune_mode = "RL,GA"
    npu_device.global_options().dump_config.enable_dump = False
    npu_device.global_options().dump_config.dump_path = "/tmp/dump"
    npu_device.global_options().dump_config.dump_step = "0|5"
    npu_device.global_options().dump_config.dump_mode = "all"
    if args.profiling == "True":
        npu_device.global_options().profiling_config.enable_profiling = True
        npu_device.global_options().profiling_config.profiling_options = (
            '{"output":"' + args.profiling_dump_path + '","training_trace":"on","task_trace":"on",'
            '"aicpu":"on","aic_metrics":"PipeUtilization","fp_point":"' + args.fp_point + '","bp_point":""}')
    npu_device.open().as_default()


def dataset(batch_size):
    rng = np.random.default_rng(0)
    features = rng.normal(size=(256, 8)).astype(np.float32)
    labels = (features @ rng.normal(size=(8, 1))).astype(np.float32)
    data = tf.data.Dataset.from_tensor_slices((features, labels)).batch(batch_size, drop_remainder=True).repeat()
    data, batch_size = npu_device.distribute.shard_and_rebatch_dataset(data, batch_size)
    return data


def model():
    return tf.keras.Sequential([
        tf.keras.Input((8,)),
        tf.keras.layers.Dense(32, activation="relu"),
        tf.keras.layers.Dropout(0.25, seed=3),
        tf.keras.layers.Dense(1),
    ])


def report(net, loss):
    sha = hashlib.sha256()
    for weight in net.weights:
        sha.update(np.ascontiguousarray(weight.numpy()).tobytes())
    print(json.dumps({"weights": sha.hexdigest(), "loss": float(loss)}))
