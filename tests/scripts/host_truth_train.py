# A TF1 sess.run loop with three planted host causes, in the users' style:
#   - markers around the host's batch preparation (npu_tf_profiling.mstx, torch_npu's names);
#   - iteration --big_step allocates a 400 MB array while preparing its batch;
#   - from iteration --busy_from on, a thread spins on the host CPU.
# Between the steps the loop sleeps, so the process is mostly idle unless a planted cause runs.
import argparse
import threading
import time

import numpy as np
import tensorflow as tf

from npu_tf_profiling import mstx

tf1 = tf.compat.v1
tf1.disable_eager_execution()


def spin(stop):
    count = 0
    while not stop.is_set():
        count += 1


def prepare_batch(rng, step, big_step):
    x = rng.rand(32, 16).astype(np.float32)
    if step == big_step:
        big = np.ones(100 * 2**20, dtype=np.float32)  # 400 MB, written, so it is resident
        x[0, 0] += big[-1] - 1.0
        del big
    return x, rng.randint(0, 4, 32)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--big_step", type=int, default=10)
    parser.add_argument("--busy_from", type=int, default=25)
    parser.add_argument("--pause", type=float, default=0.03)
    args = parser.parse_args()
    rng = np.random.RandomState(0)
    x = tf1.placeholder(tf.float32, [None, 16])
    y = tf1.placeholder(tf.int64, [None])
    w1 = tf1.get_variable("w1", [16, 64], initializer=tf1.glorot_uniform_initializer(seed=1))
    w2 = tf1.get_variable("w2", [64, 4], initializer=tf1.glorot_uniform_initializer(seed=2))
    logits = tf.matmul(tf.nn.relu(tf.matmul(x, w1)), w2)
    loss = tf.reduce_mean(tf.nn.sparse_softmax_cross_entropy_with_logits(labels=y, logits=logits))
    train_op = tf1.train.GradientDescentOptimizer(0.1).minimize(loss, global_step=tf1.train.get_or_create_global_step())
    stop = threading.Event()
    busy = threading.Thread(target=spin, args=(stop,), daemon=True)
    with tf1.Session() as sess:
        sess.run(tf1.global_variables_initializer())
        for step in range(1, args.steps + 1):
            if step == args.busy_from:
                mstx.mark("busy thread starts", domain="planted")
                busy.start()
            time.sleep(args.pause)
            with mstx.mstx_range("prepare batch"):
                batch_x, batch_y = prepare_batch(rng, step, args.big_step)
            time.sleep(args.pause)
            sess.run(train_op, feed_dict={x: batch_x, y: batch_y})
        weights = sess.run(tf1.trainable_variables())
    stop.set()
    print("weights " + "".join(w.tobytes().hex() for w in weights)[:4096])


if __name__ == "__main__":
    main()
