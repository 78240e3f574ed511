"""TensorFlow 1.15's private `tensorflow.python.data.experimental.ops.threadpool`, served to `--tf1` scripts.

17 ModelZoo files (the AlexNet/MobileNet/DenseNet input pipelines) import it at
the top to give their `tf.data` pipeline its own thread pool. TensorFlow 2 removed
the module; its public successor is `tf.data.Options().threading`, which sets the
same private pool size, so the pipeline runs as it did.
"""
from __future__ import annotations

from dataclasses import dataclass

import tensorflow as tf


@dataclass(frozen=True)
class PrivateThreadPool:
    """A dataset's own pool of `num_threads` threads (`display_name` named them in 1.15's profiler)."""

    num_threads: int
    display_name: str | None = None
    max_intra_op_parallelism: int = 1


def override_threadpool(dataset: tf.data.Dataset, thread_pool: PrivateThreadPool) -> tf.data.Dataset:
    """`dataset` with `thread_pool`'s size as its private thread pool (and its intra-op parallelism)."""
    if not isinstance(thread_pool, PrivateThreadPool):
        raise TypeError(f"override_threadpool: thread_pool must be a PrivateThreadPool, got {type(thread_pool).__name__}")
    options = tf.data.Options()
    options.threading.private_threadpool_size = thread_pool.num_threads
    options.threading.max_intra_op_parallelism = thread_pool.max_intra_op_parallelism
    return dataset.with_options(options)
