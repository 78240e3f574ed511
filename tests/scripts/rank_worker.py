"""One rank of a multi-rank Ascend-style job: linear regression, data and initial weights that differ per rank.

Started by tests/test_ranks_multiprocess.py, one process per rank, with RANK_ID,
RANK_SIZE and TF_CONFIG or RANK_TABLE_FILE in the environment (profiling, when
on, from PROFILING_MODE/PROFILING_OPTIONS or --profile-output). It saves
`<out>/rank_<id>.npz`: its own data and initial weights, the weights after the
broadcast, after training, the loss scale, and (with --collectives) what each
hccl_ops call returned. The test recomputes the training in NumPy from those.

    --api session|monitored|estimator   how the script drives TensorFlow
    --loss-scale --overflow-rank R --overflow-step K   NPULossScaleOptimizer; rank R's gradients are inf in step K
    --kill-rank R --kill-at-step K      rank R dies (SIGKILL) in step K, after its update
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
import numpy as np
import tensorflow.compat.v1 as tf

from npu_tf_profiling.bridge.ranks import graph_collectives as hccl_ops
from npu_tf_profiling.bridge.ranks.data_parallel import (
    NPUBroadcastGlobalVariablesHook,
    NPUDistributedOptimizer,
    broadcast_global_variables,
    get_local_rank_id,
    get_local_rank_size,
    get_rank_id,
    get_rank_size,
    overflow_across_ranks,
)

FEATURES, SAMPLES, BATCH, LEARNING_RATE = 4, 48, 8, 0.05


def rank_data(rank: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(100 + rank)
    x = rng.normal(size=(SAMPLES, FEATURES)).astype(np.float32)
    y = (x @ np.arange(1, FEATURES + 1, dtype=np.float32)[:, None] + 0.5 + 0.1 * rank).astype(np.float32)
    return x, y


def rank_initial_weights(rank: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(7 + rank)
    return rng.normal(size=(FEATURES, 1)).astype(np.float32), rng.normal(size=(1,)).astype(np.float32)


def build_model(features: tf.Tensor, labels: tf.Tensor, rank: int, args: argparse.Namespace) -> tuple[tf.Tensor, tf.Operation]:
    w0, b0 = rank_initial_weights(rank)
    weights = tf.get_variable("weights", initializer=w0)
    bias = tf.get_variable("bias", initializer=b0)
    loss = tf.reduce_mean(tf.square(tf.matmul(features, weights) + bias - labels))
    global_step = tf.train.get_or_create_global_step()
    optimizer = NPUDistributedOptimizer(tf.train.GradientDescentOptimizer(LEARNING_RATE))
    training_loss = loss
    if args.loss_scale:
        from npu_tf_profiling.bridge.npu_bridge.loss_scale import ExponentialUpdateLossScaleManager, NPULossScaleOptimizer

        manager = ExponentialUpdateLossScaleManager(init_loss_scale=2.0 ** 10, incr_every_n_steps=1000,
                                                    decr_every_n_nan_or_inf=1, decr_ratio=0.5)
        optimizer = NPULossScaleOptimizer(optimizer, manager, is_distributed=True)
        # Counts the steps run (a skipped step leaves the global step as it was); every rank has it, so
        # the ranks' variables match for the broadcast, and rank R's gradients are inf in step K.
        steps_run = tf.get_variable("steps_run", initializer=np.int64(0), trainable=False)
        if rank == args.overflow_rank:
            blow_up = tf.where(tf.equal(tf.assign_add(steps_run, 1), args.overflow_step), np.float32(np.inf), np.float32(1.0))
            training_loss = loss * blow_up
    train_op = optimizer.minimize(training_loss, global_step=global_step)
    if rank == args.kill_rank:
        def die(step: np.int64) -> np.int64:
            if step >= args.kill_at_step:
                # A host that fails a moment after its last steps: the profiler's reader thread
                # saves the step trace every 0.5 s, so the steps before this one are on disk.
                time.sleep(1.0)
                sys.stdout.flush()
                os.kill(os.getpid(), signal.SIGKILL)
            return step

        with tf.control_dependencies([train_op]):
            killer = tf.py_func(die, [global_step.read_value()], tf.int64)
        train_op = tf.group(train_op, killer)
    return loss, train_op


def input_fn(rank: int) -> tf.data.Dataset:
    x, y = rank_data(rank)
    return tf.data.Dataset.from_tensor_slices((x, y)).repeat().batch(BATCH, drop_remainder=True)


def weights_now(session) -> dict[str, np.ndarray]:
    """The values of the model's variables, the global step and (with loss scaling) the loss scale."""
    wanted = ("weights", "bias", "global_step", "loss_scale")
    variables = {v.op.name: v for v in tf.global_variables() if v.op.name in wanted}
    return dict(zip(variables, session.run(list(variables.values()))))


def collectives(rank: int, size: int) -> dict[str, tf.Tensor]:
    """Every hccl_ops call on rank-dependent values; the test knows what each must give."""
    mine = tf.constant([rank + 1.0, 10.0 - rank, 2.0], dtype=tf.float32)
    ints = tf.constant([[rank, -rank], [3 * rank, 7]], dtype=tf.int32)
    return {
        "sum": hccl_ops.allreduce(mine, "sum"),
        "max": hccl_ops.allreduce(mine, "max"),
        "min": hccl_ops.allreduce(ints, "min"),
        "prod": hccl_ops.allreduce(mine, "prod"),
        "broadcast_from_last": hccl_ops.broadcast([mine, ints], root_rank=size - 1)[1],
        "broadcast_one": hccl_ops.broadcast(mine * 2.0, root_rank=0),
        "allgather": hccl_ops.allgather(tf.reshape(mine, [1, 3]), size),
        "reduce_scatter": hccl_ops.reduce_scatter(tf.fill([size * 2], float(rank + 1)), "sum", size),
        "overflow_one_rank": overflow_across_ranks(tf.constant(rank == size - 1)),
        "overflow_none": overflow_across_ranks(tf.constant(False)),
    }


def run_session(args: argparse.Namespace, rank: int, size: int, result: dict) -> None:
    features, labels = tf.data.make_one_shot_iterator(input_fn(rank)).get_next()
    _, train_op = build_model(features, labels, rank, args)
    checks = collectives(rank, size) if args.collectives else {}
    bcast = broadcast_global_variables(0, rank)
    with tf.Session(config=tf.ConfigProto()) as session:  # a plain session: it joins the job by itself
        session.run(tf.global_variables_initializer())
        result.update({f"own_{k}": v for k, v in weights_now(session).items()})
        session.run(bcast)
        result.update({f"start_{k}": v for k, v in weights_now(session).items()})
        result.update({f"check_{k}": v for k, v in session.run(checks).items()})
        for _ in range(args.steps):
            session.run(train_op)
        result.update({f"end_{k}": v for k, v in weights_now(session).items()})


def run_monitored(args: argparse.Namespace, rank: int, size: int, result: dict) -> None:
    features, labels = tf.data.make_one_shot_iterator(input_fn(rank)).get_next()
    _, train_op = build_model(features, labels, rank, args)
    checks = collectives(rank, size) if args.collectives else {}
    hooks = [NPUBroadcastGlobalVariablesHook(0, rank)]
    with tf.train.MonitoredTrainingSession(hooks=hooks, config=tf.ConfigProto(), save_checkpoint_secs=None,
                                           save_summaries_steps=None, log_step_count_steps=None) as session:
        result.update({f"start_{k}": v for k, v in weights_now(session).items()})
        result.update({f"check_{k}": v for k, v in session.run(checks).items()})
        for _ in range(args.steps):
            session.run(train_op)
        result.update({f"end_{k}": v for k, v in weights_now(session).items()})


def run_estimator(args: argparse.Namespace, rank: int, size: int, result: dict) -> None:
    from npu_tf_profiling.bridge.npu_bridge.estimator import NPUEstimator, NPUEstimatorSpec, NPURunConfig
    from npu_tf_profiling.config import ProfilingConfig

    class Record(tf.train.SessionRunHook):
        def after_create_session(self, session, coord):  # runs after the broadcast hook (listed before it)
            result.update({f"start_{k}": v for k, v in weights_now(session).items()})

        def end(self, session):
            result.update({f"end_{k}": v for k, v in weights_now(session).items()})

    def model_fn(features, labels, mode):
        loss, train_op = build_model(features, labels, rank, args)
        return NPUEstimatorSpec(mode, loss=loss, train_op=train_op)

    profiling = None
    if args.profile_output:
        options = json.dumps({"output": args.profile_output, "training_trace": "on"})
        profiling = ProfilingConfig(enable_profiling=True, profiling_options=options)
    config = NPURunConfig(model_dir=os.path.join(args.out, f"model_{rank}"), profiling_config=profiling,
                          save_checkpoints_steps=None, save_checkpoints_secs=None, save_summary_steps=0,
                          log_step_count_steps=None)
    estimator = NPUEstimator(model_fn=model_fn, config=config)
    estimator.train(lambda: input_fn(rank), max_steps=args.steps, hooks=[NPUBroadcastGlobalVariablesHook(0, rank), Record()])


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--api", choices=("session", "monitored", "estimator"), default="session")
    parser.add_argument("--steps", type=int, default=10)
    parser.add_argument("--out", required=True)
    parser.add_argument("--collectives", action="store_true")
    parser.add_argument("--loss-scale", action="store_true")
    parser.add_argument("--overflow-rank", type=int, default=-1)
    parser.add_argument("--overflow-step", type=int, default=-1)
    parser.add_argument("--kill-rank", type=int, default=-1)
    parser.add_argument("--kill-at-step", type=int, default=-1)
    parser.add_argument("--profile-output", default="")
    args = parser.parse_args()
    tf.disable_eager_execution()
    rank, size = get_rank_id(), get_rank_size()
    x, y = rank_data(rank)
    w0, b0 = rank_initial_weights(rank)
    result: dict = {"x": x, "y": y, "init_weights": w0, "init_bias": b0, "rank_size": size,
                    "local_rank_id": get_local_rank_id(), "local_rank_size": get_local_rank_size()}
    started = time.monotonic()
    {"session": run_session, "monitored": run_monitored, "estimator": run_estimator}[args.api](args, rank, size, result)
    np.savez(os.path.join(args.out, f"rank_{rank}.npz"), **result)
    print(f"rank {rank} of {size}: {args.steps} steps in {time.monotonic() - started:.1f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
