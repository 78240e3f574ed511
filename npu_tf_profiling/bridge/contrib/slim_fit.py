"""Make tf-slim 1.1.0 work on TensorFlow 2.14+: its modules read `ops.Tensor`, which TensorFlow 2.14 moved.

tf-slim's last release (2020) checks `isinstance(x, ops.Tensor)` with
`ops = tensorflow.python.framework.ops`; TensorFlow 2.14 moved the class to
`tensorflow.python.framework.tensor`, so `slim.batch_norm(..., is_training=...)`,
`slim.dropout`, `optimize_loss` and `slim.learning` raise AttributeError.
Those tf-slim modules get the same overlay the script's own modules get for
that TensorFlow 1.15 name (bridge/tf1_modules.py, `TF1_NAMES`): TensorFlow's
`ops` module is not changed.
"""
from __future__ import annotations

import importlib
import sys

from npu_tf_profiling.bridge.tf1_modules import with_tf1_names

TF_SLIM_MODULES_USING_OPS_TENSOR = ("tf_slim.layers.utils", "tf_slim.layers.optimizers", "tf_slim.learning",
                                    "tf_slim.layers.rev_block_lib")
_OPS = "tensorflow.python.framework.ops"


def fit_tf_slim() -> None:
    """Point those modules' `ops` / `framework_ops` globals at the overlay; idempotent."""
    ops = importlib.import_module(_OPS)
    if hasattr(ops, "Tensor"):
        return  # TensorFlow before 2.14
    overlay = with_tf1_names(ops, ())
    for name in TF_SLIM_MODULES_USING_OPS_TENSOR:
        module = sys.modules.get(name) or importlib.import_module(name)
        for variable in ("ops", "framework_ops"):
            if vars(module).get(variable) is ops:
                setattr(module, variable, overlay)
