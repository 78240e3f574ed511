"""`tf.contrib.framework` names that are not in `tf_slim.ops.variables` (listed before it, so they win).

`arg_scope` is named here on purpose: `tf_slim.ops.variables` imports the
*module* `tf_slim.ops.arg_scope` under that name, so re-exporting variables'
names alone would make `tf.contrib.framework.arg_scope` a module, and
`with arg_scope([...]):` would fail. `nest` is TensorFlow's nest module, which
TensorFlow 1.15's contrib.framework re-exported; `is_sequence` is its 1.15
name for `is_nested`.
"""
from __future__ import annotations

from types import ModuleType

import tensorflow as tf
from tf_slim.ops.arg_scope import add_arg_scope, arg_scope, arg_scoped_arguments, current_arg_scope, has_arg_scope

from npu_tf_profiling.runtime import tf_private

_nest = tf_private.nest_module()
nest = ModuleType("nest", _nest.__doc__)
nest.__dict__.update({k: v for k, v in vars(_nest).items() if not k.startswith("__")})
nest.is_sequence = _nest.is_nested  # type: ignore[attr-defined]  # removed in TensorFlow 2.x

list_variables = tf.train.list_variables
load_checkpoint = tf.train.load_checkpoint
load_variable = tf.train.load_variable
is_tensor = tf.is_tensor


def get_name_scope() -> str:
    """The default graph's current name scope (TensorFlow 1.15: `contrib.framework.get_name_scope`)."""
    return tf.compat.v1.get_default_graph().get_name_scope()


__all__ = ["add_arg_scope", "arg_scope", "arg_scoped_arguments", "current_arg_scope", "has_arg_scope", "nest",
           "list_variables", "load_checkpoint", "load_variable", "is_tensor", "get_name_scope"]
