"""Make tf-slim 1.1.0 work on TensorFlow 2.14+, which moved names its modules read.

tf-slim's last release (2020) was written against TensorFlow 2.2. Its modules
read TensorFlow's private modules by attribute (`ops.Tensor`, `ops.IndexedSlices`,
`control_flow_ops.cond`, `array_ops.stack`, `variable_scope.variable`), and
TensorFlow 2.13-2.14 moved each of those names to a module of its own, so
`optimize_loss`, `slim.learning`, `slim.batch_norm(..., is_training=...)`,
`slim.local_variable` and the streaming metrics raise AttributeError. Every
tf-slim module global that is one of those TensorFlow modules becomes the
overlay the script's own modules get for it (bridge/launch/tf1_modules.py, `TF1_NAMES`:
the real module plus the moved names). Which names tf-slim uses was found by
scanning its code, and `tests/test_bridge_slim_scan.py` rescans it, so a name
missing from the table fails there, not in a user's run.

`slim.batch_norm` on 4-D inputs also builds `tensorflow.python.layers.normalization.BatchNormalization`,
which TensorFlow 2.15 loads from the separate `tf_keras` package; without
it, tf-slim gets `tf.compat.v1.layers.BatchNormalization`, the class TensorFlow
2.15's own `tf.compat.v1.layers.batch_normalization` builds.
Only tf-slim's module globals change; TensorFlow's modules are not touched.
"""
from __future__ import annotations

import importlib
import sys
from types import ModuleType

from npu_tf_profiling.bridge.launch.tf1_modules import TF1_NAMES, with_tf1_names


def fit_tf_slim() -> None:
    """Point every loaded tf-slim module's TensorFlow-module globals at their overlays; idempotent."""
    _fit_batch_norm()
    for name, module in list(sys.modules.items()):
        if name == "tf_slim" or name.startswith("tf_slim."):
            fit_module(module)


def fit_module(module: ModuleType | None) -> None:
    """Replace `module`'s globals that are TensorFlow modules with moved names (`TF1_NAMES`) by their overlays."""
    if module is None:
        return
    for variable, value in list(vars(module).items()):
        if isinstance(value, ModuleType) and value.__name__ in TF1_NAMES and type(value) is ModuleType:
            setattr(module, variable, with_tf1_names(value, ()))


def _fit_batch_norm() -> None:
    layers = importlib.import_module("tf_slim.layers.layers")
    try:
        layers.normalization_layers.BatchNormalization
    except ImportError:
        import tensorflow as tf

        normalization = ModuleType("normalization", "tf.compat.v1.layers' batch normalization, for tf_slim")
        normalization.BatchNormalization = tf.compat.v1.layers.BatchNormalization  # type: ignore[attr-defined]
        normalization.batch_normalization = tf.compat.v1.layers.batch_normalization  # type: ignore[attr-defined]
        layers.normalization_layers = normalization
