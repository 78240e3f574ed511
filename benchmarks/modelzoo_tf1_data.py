"""Synthetic data for the ModelZoo TF1 scripts trained end to end (docs/modelzoo_tf1_sample.md, "Trained").

Each generator writes, in the layout the script's own reader expects, a few
hundred random examples: enough for 20 training steps with the flags the doc
gives. Nothing here is the scripts' code or their data; the formats are the
public datasets' (Cora in Planetoid and npz form, MovieLens ratings, MRPC tsv,
THUCNews text, ImageNet TFRecords), filled with noise.

    python benchmarks/modelzoo_tf1_data.py NAME DIR      (NAME: one of GENERATORS)
"""
from __future__ import annotations

import json
import os
import pickle
import sys
from typing import Callable

import numpy as np

RNG = np.random.default_rng(0)


def gcn(out: str) -> None:
    """cora_full.npz as GCN_ID2127's dataset.py reads it (CSR features and adjacency, labels)."""
    import scipy.sparse as sp

    n, d, classes = 400, 64, 4
    feat = sp.csr_matrix((RNG.random((n, d)) < 0.1).astype(np.float32))
    rows = np.concatenate([np.arange(n - 1), RNG.integers(0, n, 800)])
    cols = np.concatenate([np.arange(1, n), RNG.integers(0, n, 800)])
    adj = sp.csr_matrix((np.ones(len(rows), np.float32), (rows, cols)), shape=(n, n))
    np.savez(os.path.join(out, "cora_full.npz"), attr_data=feat.data, attr_indices=feat.indices, attr_indptr=feat.indptr,
             attr_shape=feat.shape, adj_data=adj.data, adj_indices=adj.indices, adj_indptr=adj.indptr,
             adj_shape=adj.shape, labels=RNG.integers(0, classes, n))


def planetoid(out: str) -> None:
    """Planetoid-format Cora (ind.cora.x/tx/allx/graph pickles, test.index) in OUT/data/, for VGAE_ID2868."""
    import scipy.sparse as sp

    n, d, n_test = 300, 40, 60
    data = os.path.join(out, "data")
    os.makedirs(data, exist_ok=True)
    feat = sp.csr_matrix((RNG.random((n, d)) < 0.1).astype(np.float32))
    allx, tx = feat[: n - n_test], feat[n - n_test:]
    graph = {i: sorted({(i + 1) % n, int(RNG.integers(0, n)), int(RNG.integers(0, n))} - {i}) for i in range(n)}
    for name, obj in (("x", allx[:50]), ("tx", tx), ("allx", allx), ("graph", graph)):
        with open(os.path.join(data, f"ind.cora.{name}"), "wb") as handle:
            pickle.dump(obj, handle)
    with open(os.path.join(data, "ind.cora.test.index"), "w") as handle:
        handle.write("\n".join(str(i) for i in RNG.permutation(np.arange(n - n_test, n))))


def iris(out: str) -> None:
    """iris.train / iris.test: four numbers and a class name a line (Multi-Layer_Perceptron_ID0628)."""
    names = ["Iris-setosa", "Iris-versicolor", "Iris-virginica"]
    for split, n in (("iris.train", 120), ("iris.test", 30)):
        with open(os.path.join(out, split), "w") as handle:
            for _ in range(n):
                c = RNG.integers(0, 3)
                handle.write(",".join(map(str, RNG.normal(c, 0.5, 4).round(2))) + "," + names[c] + "\n")


def movielens(out: str, users: int = 80, items: int = 60, n: int = 1500) -> None:
    """ratings.dat (user::item::rating::timestamp) for i_autorec_ID0187 (--num_users 80 --num_items 60 --num_total_ratings 1500)."""
    with open(os.path.join(out, "ratings.dat"), "w") as handle:
        for pair in RNG.choice(users * items, n, replace=False):
            handle.write(f"{pair // items + 1}::{pair % items + 1}::{RNG.integers(1, 6)}::97830{RNG.integers(1000, 9999)}\n")


def autoint(out: str, n: int = 640) -> None:
    """AutoInt_ID0189's MovieLens arrays: 6 single-value fields, 6 genre slots, labels (feature ids < 3600)."""
    for split, rows in (("train", n), ("valid", n // 4), ("test", n // 4)):
        np.save(f"{out}/{split}_i_other.npy", RNG.integers(0, 3600, (rows, 6)))
        np.save(f"{out}/{split}_x_other.npy", np.ones((rows, 6), np.float32))
        np.save(f"{out}/{split}_i_genre.npy", RNG.integers(0, 3600, (rows, 6)))
        np.save(f"{out}/{split}_x_genre.npy", (RNG.random((rows, 6)) < 0.5).astype(np.float32) + np.eye(6)[0])
        np.save(f"{out}/{split}_y.npy", RNG.integers(0, 2, rows).astype(np.float32))


def mrpc(out: str) -> None:
    """A 2-layer, 32-wide bert_config.json, its vocab.txt, and MRPC-format train/dev/test.tsv (80/8/8 pairs)."""
    words = [f"w{i}" for i in range(60)]
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + words
    with open(os.path.join(out, "vocab.txt"), "w") as handle:
        handle.write("\n".join(vocab) + "\n")
    config = {"attention_probs_dropout_prob": 0.1, "hidden_act": "gelu", "hidden_dropout_prob": 0.1, "hidden_size": 32,
              "initializer_range": 0.02, "intermediate_size": 64, "max_position_embeddings": 64,
              "num_attention_heads": 2, "num_hidden_layers": 2, "type_vocab_size": 2, "vocab_size": len(vocab)}
    with open(os.path.join(out, "bert_config.json"), "w") as handle:
        json.dump(config, handle)
    for split, n in (("train", 80), ("dev", 8), ("test", 8)):
        with open(os.path.join(out, f"{split}.tsv"), "w") as handle:
            handle.write("Quality\t#1 ID\t#2 ID\t#1 String\t#2 String\n")
            for i in range(n):
                first, second = (" ".join(RNG.choice(words, RNG.integers(4, 10))) for _ in range(2))
                handle.write(f"{RNG.integers(0, 2)}\t{i}\t{i + 1000}\t{first}\t{second}\n")


def cnews(out: str, n: int = 320) -> None:
    """THUCNews-format cnews.{train,val,test}.txt (category \\t text, the loader's 10 categories) and a char vocab."""
    categories = ["体育", "财经", "房产", "家居", "教育", "科技", "时尚", "时政", "游戏", "娱乐"]
    chars = [chr(0x4E00 + i) for i in range(300)]
    with open(f"{out}/cnews.vocab.txt", "w", encoding="utf-8") as handle:
        handle.write("\n".join(["<PAD>"] + chars) + "\n")
    for split, rows in (("train", n), ("val", n // 4), ("test", n // 4)):
        with open(f"{out}/cnews.{split}.txt", "w", encoding="utf-8") as handle:
            for _ in range(rows):
                handle.write(categories[RNG.integers(0, 10)] + "\t" + "".join(RNG.choice(chars, RNG.integers(50, 200))) + "\n")


def _jpeg_records(path: str, n: int, size: int, features: Callable[[bytes, int], dict]) -> None:
    import tensorflow as tf

    with tf.io.TFRecordWriter(path) as writer:
        for _ in range(n):
            jpeg = tf.io.encode_jpeg(RNG.integers(0, 255, (size, size, 3), dtype=np.uint8)).numpy()
            example = tf.train.Example(features=tf.train.Features(feature=features(jpeg, int(RNG.integers(1, 10)))))
            writer.write(example.SerializeToString())


def _bytes(value: bytes):
    import tensorflow as tf

    return tf.train.Feature(bytes_list=tf.train.BytesList(value=[value]))


def _int(value: int):
    import tensorflow as tf

    return tf.train.Feature(int64_list=tf.train.Int64List(value=[value]))


def xception(out: str) -> None:
    """40 64x64 JPEG records with the fields Xception_ID0178's data_utils.py parses (10 classes)."""
    def features(jpeg: bytes, label: int) -> dict:
        return {"image": _bytes(jpeg), "height": _int(64), "width": _int(64), "channels": _int(3),
                "colorspace": _bytes(b"RGB"), "img_format": _bytes(b"JPEG"), "label": _int(label),
                "text": _bytes(b""), "filename": _bytes(b"x.jpg")}
    _jpeg_records(os.path.join(out, "train-00000-of-00001"), 40, 64, features)


def slim_imagenet(out: str) -> None:
    """train-*/validation-* slim-ImageNet records (image/encoded, image/class/label, empty boxes), for MobileNetV2_ID0074."""
    import tensorflow as tf

    empty = tf.train.Feature(float_list=tf.train.FloatList(value=[]))

    def features(jpeg: bytes, label: int) -> dict:
        return {"image/encoded": _bytes(jpeg), "image/class/label": _int(label), "image/class/text": _bytes(b"x"),
                **{f"image/object/bbox/{c}": empty for c in ("xmin", "ymin", "xmax", "ymax")}}
    for split in ("train", "validation"):
        _jpeg_records(os.path.join(out, f"{split}-00000-of-00001"), 64, 80, features)


GENERATORS: dict[str, Callable[[str], None]] = {
    "gcn": gcn, "planetoid": planetoid, "iris": iris, "movielens": movielens, "autoint": autoint, "mrpc": mrpc,
    "cnews": cnews, "xception": xception, "slim_imagenet": slim_imagenet,
}


def main() -> int:
    if len(sys.argv) != 3 or sys.argv[1] not in GENERATORS:
        print(__doc__, file=sys.stderr)
        return 2
    os.makedirs(sys.argv[2], exist_ok=True)
    GENERATORS[sys.argv[1]](sys.argv[2])
    return 0


if __name__ == "__main__":
    sys.exit(main())
