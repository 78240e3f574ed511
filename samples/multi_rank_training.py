"""A multi-rank training script in the style of ModelZoo-TensorFlow (sess.run, NPUDistributedOptimizer).

Each process is one rank: RANK_ID, RANK_SIZE, and TF_CONFIG or RANK_TABLE_FILE
say where it stands (docs/ascend_scripts.md, "Multi-rank Ascend scripts", has the exact
commands). The script itself contains nothing about servers or clusters: a plain
`tf.Session(config=...)` joins the job. Each rank reads its own shard of the
data, starts from rank 0's weights (the broadcast), and averages its gradients
with the other ranks, so every rank prints the same weights checksum. With
PROFILING_MODE/PROFILING_OPTIONS set, each rank writes its own `device_<rank>`
step trace with the all-reduce in the Reduce columns; `npu-tf-prof cluster
OUTPUT` then compares the ranks.

    RANK_SIZE=1 python samples/multi_rank_training.py    # one rank also works, unchanged
"""
from __future__ import annotations

import argparse
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np
import tensorflow.compat.v1 as tf

from npu_tf_profiling.bridge.ranks.data_parallel import (
    NPUDistributedOptimizer,
    broadcast_global_variables,
    get_rank_id,
    get_rank_size,
)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=50)
    args = parser.parse_args()
    tf.disable_eager_execution()
    rank, size = get_rank_id(), get_rank_size()

    rng = np.random.default_rng(0)
    x = rng.normal(size=(2048, 16)).astype(np.float32)
    y = (np.sin(x[:, :1]) + x[:, 1:2] ** 2).astype(np.float32)
    shard = tf.data.Dataset.from_tensor_slices((x, y)).shard(size, rank)  # this rank's share of the data
    features, labels = tf.data.make_one_shot_iterator(shard.shuffle(256, seed=rank).repeat().batch(64)).get_next()

    tf.set_random_seed(rank)  # different initial weights per rank: the broadcast makes them rank 0's
    hidden = tf.layers.dense(features, 64, activation=tf.nn.relu, name="hidden")
    loss = tf.losses.mean_squared_error(labels, tf.layers.dense(hidden, 1, name="output"))
    global_step = tf.train.get_or_create_global_step()
    train_op = NPUDistributedOptimizer(tf.train.AdamOptimizer(0.01)).minimize(loss, global_step=global_step)
    broadcast = broadcast_global_variables(root_rank=0, index=rank)

    with tf.Session(config=tf.ConfigProto(allow_soft_placement=True)) as session:
        session.run(tf.global_variables_initializer())
        session.run(broadcast)
        for step in range(1, args.steps + 1):
            _, value = session.run([train_op, loss])
            if step % 10 == 0:
                print(f"rank {rank}/{size} step {step}: loss {value:.4f}", flush=True)
        checksum = sum(float(np.abs(v).sum()) for v in session.run(tf.trainable_variables()))
    print(f"rank {rank}/{size}: done, weights checksum {checksum:.6f}", flush=True)


if __name__ == "__main__":
    main()
