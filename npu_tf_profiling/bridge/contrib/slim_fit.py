"""Make tf-slim 1.1.0 work on TensorFlow 2.14+, which moved two things its modules read.

tf-slim's last release (2020) was written against TensorFlow 2.2:
- it checks `isinstance(x, ops.Tensor)` with `ops = tensorflow.python.framework.ops`;
  TensorFlow 2.14 moved the class to `tensorflow.python.framework.tensor`, so
  `slim.batch_norm(..., is_training=...)`, `slim.dropout`, `optimize_loss` and
  `slim.learning` raise AttributeError. Those tf-slim modules get the overlay the
  script's own modules get for that TensorFlow 1.15 name (bridge/tf1_modules.py,
  `TF1_NAMES`);
- `slim.batch_norm` on 4-D inputs builds `tensorflow.python.layers.normalization.BatchNormalization`,
  which TensorFlow 2.15 loads from the separate `tf_keras` package; without
  it, tf-slim gets `tf.compat.v1.layers.BatchNormalization`, the class TensorFlow
  2.15's own `tf.compat.v1.layers.batch_normalization` builds.
Only tf-slim's module globals change; TensorFlow's modules are not touched.
"""
from __future__ import annotations

import importlib
import sys
from types import ModuleType

from npu_tf_profiling.bridge.tf1_modules import with_tf1_names

TF_SLIM_MODULES_USING_OPS_TENSOR = ("tf_slim.layers.utils", "tf_slim.layers.optimizers", "tf_slim.learning",
                                    "tf_slim.layers.rev_block_lib")
_OPS = "tensorflow.python.framework.ops"


def fit_tf_slim() -> None:
    """Point those modules' `ops` / `framework_ops` and `normalization_layers` globals at what works; idempotent."""
    _fit_batch_norm()
    ops = importlib.import_module(_OPS)
    if hasattr(ops, "Tensor"):
        return  # TensorFlow before 2.14
    overlay = with_tf1_names(ops, ())
    for name in TF_SLIM_MODULES_USING_OPS_TENSOR:
        module = sys.modules.get(name) or importlib.import_module(name)
        for variable in ("ops", "framework_ops"):
            if vars(module).get(variable) is ops:
                setattr(module, variable, overlay)


def _fit_batch_norm() -> None:
    layers = importlib.import_module("tf_slim.layers.layers")
    try:
        layers.normalization_layers.BatchNormalization  # noqa: B018 - loads tf_keras where TensorFlow wants it
    except ImportError:
        import tensorflow as tf

        normalization = ModuleType("normalization", "tf.compat.v1.layers' batch normalization, for tf_slim")
        normalization.BatchNormalization = tf.compat.v1.layers.BatchNormalization  # type: ignore[attr-defined]
        normalization.batch_normalization = tf.compat.v1.layers.batch_normalization  # type: ignore[attr-defined]
        layers.normalization_layers = normalization
