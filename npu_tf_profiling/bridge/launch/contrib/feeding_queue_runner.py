"""`tf.contrib.training.FeedingQueueRunner`: a QueueRunner whose threads feed Python values into its enqueue ops.

TF1 input code (ModelZoo's ADDA and PCN) fills a `FIFOQueue` from a Python
generator: each thread runs an enqueue op with `feed_dict=feed_fn()`. TensorFlow
2 dropped contrib, but the class lives on, unchanged, in tensorflow-estimator
(`_FeedingQueueRunner`, the code `tf.estimator.inputs.numpy_input_fn` used),
so it is served from there rather than copied. It is imported only when a
script uses the name: tensorflow-estimator ships with TensorFlow up to 2.15,
not later, and every other `contrib.training` name must keep working without it.
"""
from __future__ import annotations

import importlib
from typing import Any

from npu_tf_profiling.runtime.tf_private import FEEDING_QUEUE_RUNNER

_HOME, _CLASS = FEEDING_QUEUE_RUNNER


def __getattr__(name: str) -> Any:
    """The estimator's class for `FeedingQueueRunner`; ModuleNotFoundError saying what to install if it is absent."""
    if name != "FeedingQueueRunner":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    try:
        home = importlib.import_module(_HOME)
    except ModuleNotFoundError as exc:
        raise ModuleNotFoundError(
            f"tf.contrib.training.FeedingQueueRunner is served from tensorflow-estimator ({_HOME}), which is not "
            "importable here: pip install 'tensorflow-estimator==2.15.*' (TensorFlow 2.16 and later no longer "
            f"install it; missing: {exc.name})", name=exc.name) from None
    return getattr(home, _CLASS)


def __dir__() -> list[str]:
    return ["FeedingQueueRunner"]
