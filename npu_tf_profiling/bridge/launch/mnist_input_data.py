"""`tensorflow.examples.tutorials.mnist.input_data` for `--tf1` scripts: TensorFlow 1.15's MNIST reader.

TensorFlow 1.15 shipped this module (scripts call `input_data.read_data_sets(dir,
one_hot=True)` and then `mnist.train.next_batch(n)` or `mnist.train.images`);
TensorFlow 2 dropped it, and dozens of ModelZoo-TensorFlow MNIST scripts import
it. This is a reader with the same signature and results for the four standard
IDX files (`train-images-idx3-ubyte.gz`, ...) in the given folder. It never
downloads: a missing file is an error naming it and where it can be fetched.
"""
from __future__ import annotations

import gzip
import os
from typing import NamedTuple

import numpy as np

SOURCE_URL = "https://storage.googleapis.com/cvdf-datasets/mnist/"
TRAIN_IMAGES = "train-images-idx3-ubyte.gz"
TRAIN_LABELS = "train-labels-idx1-ubyte.gz"
TEST_IMAGES = "t10k-images-idx3-ubyte.gz"
TEST_LABELS = "t10k-labels-idx1-ubyte.gz"
_IMAGES_MAGIC = 2051
_LABELS_MAGIC = 2049
NUM_CLASSES = 10


def _read_idx(path: str, magic: int, dims: int) -> np.ndarray:
    """The uint8 array of an IDX file (big-endian header: magic, then one uint32 per dimension)."""
    with gzip.open(path, "rb") as stream:
        header = np.frombuffer(stream.read(4 * (dims + 1)), dtype=">u4")
        if header.size != dims + 1 or int(header[0]) != magic:
            raise ValueError(f"{path}: not an MNIST IDX file (expected magic number {magic})")
        shape = tuple(int(size) for size in header[1:])
        data = np.frombuffer(stream.read(), dtype=np.uint8)
    if data.size != int(np.prod(shape)):
        raise ValueError(f"{path}: {data.size} bytes of data for a header shape of {shape}")
    return data.reshape(shape)


def extract_images(path: str) -> np.ndarray:
    """uint8 images [N, rows, cols, 1] from an idx3 file, as TensorFlow 1.15's reader returns them."""
    return _read_idx(path, _IMAGES_MAGIC, 3)[..., np.newaxis]


def dense_to_one_hot(labels_dense: np.ndarray, num_classes: int = NUM_CLASSES) -> np.ndarray:
    """[N] class ids -> [N, num_classes] one-hot rows."""
    one_hot = np.zeros((labels_dense.shape[0], num_classes), dtype=np.uint8)
    one_hot[np.arange(labels_dense.shape[0]), labels_dense] = 1
    return one_hot


def extract_labels(path: str, one_hot: bool = False, num_classes: int = NUM_CLASSES) -> np.ndarray:
    """uint8 labels [N] (or one-hot [N, num_classes]) from an idx1 file."""
    labels = _read_idx(path, _LABELS_MAGIC, 1)
    return dense_to_one_hot(labels, num_classes) if one_hot else labels


class DataSet:
    """One split: `images`, `labels`, `num_examples`, `epochs_completed` and `next_batch`, as in TensorFlow 1.15.

    Images are scaled to [0, 1] when `dtype` is float32 and flattened to
    [N, rows*cols] when `reshape` is true; `next_batch` shuffles once per epoch
    and, at an epoch's end, completes the batch from the next (reshuffled) epoch.
    """

    def __init__(self, images: np.ndarray, labels: np.ndarray, fake_data: bool = False, one_hot: bool = False,
                 dtype: object = np.float32, reshape: bool = True, seed: int | None = None) -> None:
        if fake_data:
            raise NotImplementedError("fake_data=True: generate arrays with numpy and pass them as images/labels")
        if images.shape[0] != labels.shape[0]:
            raise ValueError(f"images.shape: {images.shape} labels.shape: {labels.shape}")
        numpy_dtype = np.dtype(getattr(dtype, "as_numpy_dtype", dtype))
        if numpy_dtype not in (np.dtype(np.uint8), np.dtype(np.float32)):
            raise TypeError(f"Invalid image dtype {dtype!r}, expected uint8 or float32")
        if reshape:
            images = images.reshape(images.shape[0], int(np.prod(images.shape[1:])))
        if numpy_dtype == np.float32:
            images = images.astype(np.float32) * (1.0 / 255.0)
        self._images = images
        self._labels = labels
        self._rng = np.random.RandomState(seed)
        self._order = np.arange(images.shape[0])
        self._position = 0
        self._epochs_completed = 0

    @property
    def images(self) -> np.ndarray:
        return self._images

    @property
    def labels(self) -> np.ndarray:
        return self._labels

    @property
    def num_examples(self) -> int:
        return int(self._images.shape[0])

    @property
    def epochs_completed(self) -> int:
        return self._epochs_completed

    def next_batch(self, batch_size: int, fake_data: bool = False, shuffle: bool = True) -> tuple[np.ndarray, np.ndarray]:
        """The next `batch_size` examples; an epoch boundary inside the batch starts a new shuffled epoch."""
        if fake_data:
            raise NotImplementedError("fake_data=True is not supported")
        if self._position == 0 and self._epochs_completed == 0 and shuffle:
            self._rng.shuffle(self._order)
        taken: list[np.ndarray] = []
        needed = batch_size
        while needed > 0:
            chunk = self._order[self._position:self._position + needed].copy()  # the order is reshuffled in place
            taken.append(chunk)
            self._position += chunk.size
            needed -= chunk.size
            if self._position >= self.num_examples:
                self._epochs_completed += 1
                self._position = 0
                if shuffle:
                    self._rng.shuffle(self._order)
        rows = np.concatenate(taken)
        return self._images[rows], self._labels[rows]


class Datasets(NamedTuple):
    train: DataSet
    validation: DataSet
    test: DataSet


def _existing(train_dir: str, name: str, source_url: str) -> str:
    path = os.path.join(train_dir, name)
    if not os.path.isfile(path):
        raise FileNotFoundError(
            f"{path}: MNIST file missing; read_data_sets here reads local files only "
            f"(put the 4 IDX files from {source_url} in {train_dir})")
    return path


def read_data_sets(train_dir: str, fake_data: bool = False, one_hot: bool = False, dtype: object = np.float32,
                   reshape: bool = True, validation_size: int = 5000, seed: int | None = None,
                   source_url: str = SOURCE_URL) -> Datasets:
    """train/validation/test from the IDX files in `train_dir`; the first `validation_size` training images validate."""
    if fake_data:
        raise NotImplementedError("fake_data=True: generate arrays with numpy and build DataSet objects from them")
    train_images = extract_images(_existing(train_dir, TRAIN_IMAGES, source_url))
    train_labels = extract_labels(_existing(train_dir, TRAIN_LABELS, source_url), one_hot=one_hot)
    test_images = extract_images(_existing(train_dir, TEST_IMAGES, source_url))
    test_labels = extract_labels(_existing(train_dir, TEST_LABELS, source_url), one_hot=one_hot)
    if not 0 <= validation_size <= len(train_images):
        raise ValueError(f"Validation size should be between 0 and {len(train_images)}. Received: {validation_size}.")
    options = {"dtype": dtype, "reshape": reshape, "seed": seed}
    return Datasets(
        train=DataSet(train_images[validation_size:], train_labels[validation_size:], **options),
        validation=DataSet(train_images[:validation_size], train_labels[:validation_size], **options),
        test=DataSet(test_images, test_labels, **options),
    )
