"""`--tf1` serves modules TensorFlow 1.15 had and TensorFlow 2 dropped, as real ModelZoo scripts import them.

LeNet- and DCGAN-style scripts start with `from tensorflow.examples.tutorials.mnist
import input_data`; others with `from tensorflow.python import graph_util`. The
MNIST reader is checked in process against IDX files written here; the imports are
checked through the launcher, in a script of that kind.
"""
from __future__ import annotations

import gzip
import importlib
import json
import os
import struct
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

import tensorflow as tf

from npu_tf_profiling.bridge.launch import mnist_input_data
from npu_tf_profiling.bridge.launch.tf1_modules import TF1_ONLY_MODULES

CONSOLE_SCRIPT = str(Path(sys.executable).parent / "npu-tf-prof")
TRAIN_COUNT, TEST_COUNT = 30, 7


def _write_idx(folder: Path, prefix: str, images: np.ndarray, labels: np.ndarray) -> None:
    with gzip.open(folder / f"{prefix}-images-idx3-ubyte.gz", "wb") as stream:
        stream.write(struct.pack(">IIII", 2051, *images.shape) + images.tobytes())
    with gzip.open(folder / f"{prefix}-labels-idx1-ubyte.gz", "wb") as stream:
        stream.write(struct.pack(">II", 2049, labels.shape[0]) + labels.tobytes())


@pytest.fixture()
def mnist_dir(tmp_path: Path) -> Path:
    """IDX files whose pixel (0, 0) is the example's index, so batches can be traced back to examples."""
    folder = tmp_path / "MNIST"
    folder.mkdir()
    for prefix, count in (("train", TRAIN_COUNT), ("t10k", TEST_COUNT)):
        images = np.zeros((count, 28, 28), dtype=np.uint8)
        images[:, 0, 0] = np.arange(count)
        _write_idx(folder, prefix, images, (np.arange(count) % 10).astype(np.uint8))
    return folder


def test_read_data_sets_splits_scales_and_one_hots_like_tensorflow_1(mnist_dir: Path) -> None:
    mnist = mnist_input_data.read_data_sets(str(mnist_dir), one_hot=True, validation_size=10)
    assert (mnist.train.num_examples, mnist.validation.num_examples, mnist.test.num_examples) == (20, 10, TEST_COUNT)
    assert mnist.train.images.shape == (20, 784) and mnist.train.images.dtype == np.float32
    assert mnist.train.images[0, 0] == pytest.approx(10 / 255)  # the first 10 training images validate
    assert mnist.train.labels.shape == (20, 10) and mnist.train.labels[3].argmax() == 13 % 10
    unflattened = mnist_input_data.read_data_sets(str(mnist_dir), reshape=[], validation_size=0)  # DCGAN passes []
    assert unflattened.train.images.shape == (TRAIN_COUNT, 28, 28, 1) and unflattened.train.labels.shape == (TRAIN_COUNT,)


def test_next_batch_gives_every_example_once_per_epoch_and_wraps_into_the_next(mnist_dir: Path) -> None:
    train = mnist_input_data.read_data_sets(str(mnist_dir), validation_size=0, seed=3).train
    seen = [train.next_batch(8)[0][:, 0] for _ in range(3)]  # 24 of 30
    images, labels = train.next_batch(8)  # 6 from epoch 1, 2 from epoch 2
    assert train.epochs_completed == 1 and images.shape == (8, 784) and labels.shape == (8,)
    first_epoch = np.concatenate(seen + [images[:6, 0]])
    assert sorted(np.rint(first_epoch * 255).astype(int)) == list(range(TRAIN_COUNT))
    assert not np.array_equal(first_epoch, np.arange(TRAIN_COUNT) / 255)  # shuffled


def test_a_missing_file_is_named_and_nothing_is_downloaded(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="train-images-idx3-ubyte.gz: MNIST file missing"):
        mnist_input_data.read_data_sets(str(tmp_path))


def test_threadpool_override_gives_the_pipeline_its_private_pool_and_the_same_elements() -> None:
    threadpool = importlib.import_module(TF1_ONLY_MODULES["tensorflow.python.data.experimental.ops.threadpool"])
    pool = threadpool.PrivateThreadPool(3, display_name="input_pipeline_thread_pool")
    dataset = threadpool.override_threadpool(tf.data.Dataset.range(5).map(lambda x: x * 2), pool)
    assert dataset.options().threading.private_threadpool_size == 3
    assert [int(x) for x in dataset] == [0, 2, 4, 6, 8]
    with pytest.raises(TypeError, match="must be a PrivateThreadPool"):
        threadpool.override_threadpool(dataset, 3)


SCRIPT = """\
import json, sys
import tensorflow as tf
from tensorflow.examples.tutorials.mnist import input_data
import tensorflow.examples.tutorials.mnist.input_data as dotted
from tensorflow.python import graph_util
mnist = input_data.read_data_sets(sys.argv[1], one_hot=True, validation_size=5)
x = tf.placeholder(tf.float32, [None, 784])
w = tf.Variable(tf.zeros([784, 10]), name="w")
y = tf.identity(tf.matmul(x, w), name="y")
with tf.Session() as sess:
    sess.run(tf.global_variables_initializer())
    frozen = graph_util.convert_variables_to_constants(sess, sess.graph_def, ["y"])
    out = sess.run(y, {x: mnist.train.next_batch(4)[0]})
print(json.dumps({"same_module": dotted is input_data, "train": mnist.train.num_examples, "out": list(out.shape),
                  "frozen_consts": sorted(n.name for n in frozen.node if n.op == "Const")}))
"""


def test_tf1_scripts_import_the_dropped_modules_through_the_launcher(tmp_path: Path, mnist_dir: Path) -> None:
    script = tmp_path / "mnist_style.py"
    script.write_text(textwrap.dedent(SCRIPT))
    environ = {k: v for k, v in os.environ.items() if not k.startswith("PROFILING_")}
    environ["TF_CPP_MIN_LOG_LEVEL"] = "2"
    launched = subprocess.run([CONSOLE_SCRIPT, "run", "--tf1", str(script), str(mnist_dir)], cwd=tmp_path,
                              env=environ, capture_output=True, text=True, timeout=180)
    assert launched.returncode == 0, launched.stderr[-3000:]
    report = json.loads(launched.stdout.strip().splitlines()[-1])
    assert report == {"same_module": True, "train": TRAIN_COUNT - 5, "out": [4, 10], "frozen_consts": ["w"]}
