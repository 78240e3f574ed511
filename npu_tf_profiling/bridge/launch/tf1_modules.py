"""Modules and names TensorFlow 1.15 had under `tensorflow.` that TensorFlow 2 dropped or moved, for `--tf1` user code.

Real ModelZoo-TensorFlow scripts import them at the top (`from
tensorflow.examples.tutorials.mnist import input_data`, `from tensorflow.python
import graph_util`), so without them a script dies before building a graph.

- A module TensorFlow 2 dropped (`TF1_ONLY_MODULES`) is put into `sys.modules`
  when user code imports it; no library imports a path that does not exist.
- A module TensorFlow 2 still has, but without some of its 1.15 names
  (`TF1_NAMES`: `graph_util.convert_variables_to_constants`, 78 ModelZoo files;
  `tensorflow.python.keras.optimizers.Adam`), is given to user code as an
  overlay: the real module plus those names, returned by the import hook for
  `from X import Y` and never put into `sys.modules`, so libraries keep
  TensorFlow 2's module.
- `tensorflow_core.X` (1.15's real package name) is `tensorflow.X` (`tf1_name`).
"""
from __future__ import annotations

import importlib
import sys
from types import ModuleType

# module path TensorFlow 1.15 had -> the module that provides it here
TF1_ONLY_MODULES: dict[str, str] = {
    "tensorflow.examples.tutorials.mnist.input_data": "npu_tf_profiling.bridge.launch.mnist_input_data",
    "tensorflow.python.graph_util": "tensorflow._api.v2.compat.v1.graph_util",  # tf.compat.v1.graph_util
    "tensorflow.python.data.experimental.ops.threadpool": "npu_tf_profiling.bridge.launch.data_threadpool",
}


_KERAS_V2 = "tensorflow.python.keras.optimizer_v2."
_V1_GRAPH_UTIL = "tensorflow._api.v2.compat.v1.graph_util:"

# module path -> {name TensorFlow 1.15 had there: "module:attribute" that provides it here}
TF1_NAMES: dict[str, dict[str, str]] = {
    "tensorflow.python.framework.graph_util": {
        name: _V1_GRAPH_UTIL + name for name in ("convert_variables_to_constants", "remove_training_nodes",
                                                 "must_run_on_cpu", "tensor_shape_from_node_def_name")},
    "tensorflow.python.keras.utils": {"multi_gpu_model": "npu_tf_profiling.bridge.launch.keras_multi_gpu:multi_gpu_model"},
    # Moved out of these modules in TensorFlow 2.13-2.14 (each name is where 2.15 keeps it); the list is what
    # tf-slim 1.1.0's modules use (tests/test_bridge_slim_scan.py scans its code), which the scripts use too.
    "tensorflow.python.framework.ops": {"Tensor": "tensorflow.python.framework.tensor:Tensor",
                                        "IndexedSlices": "tensorflow.python.framework.indexed_slices:IndexedSlices"},
    "tensorflow.python.ops.array_ops": {"stack": "tensorflow.python.ops.array_ops_stack:stack",
                                        "unstack": "tensorflow.python.ops.array_ops_stack:unstack"},
    "tensorflow.python.ops.control_flow_ops": {"cond": "tensorflow.python.ops.cond:cond",
                                               "case": "tensorflow.python.ops.control_flow_case:case",
                                               "while_loop": "tensorflow.python.ops.while_loop:while_loop",
                                               "Assert": "tensorflow.python.ops.control_flow_assert:Assert"},
    "tensorflow.python.ops.variable_scope": {"variable": "tensorflow.python.ops.variable_v1:VariableV1"},
    "tensorflow.python.keras.optimizers": {  # 1.15's module re-exported the optimizer_v2 classes
        name: f"{_KERAS_V2}{module}:{name}" for name, module in (
            ("SGD", "gradient_descent"), ("Adam", "adam"), ("Adadelta", "adadelta"), ("Adagrad", "adagrad"),
            ("Adamax", "adamax"), ("Nadam", "nadam"), ("RMSprop", "rmsprop"), ("Ftrl", "ftrl"))},
}

_overlays: dict[str, ModuleType] = {}


def tf1_name(name: str) -> str:
    """`tensorflow_core[.x]` -> `tensorflow[.x]`: in 1.15, `tensorflow` was a shim forwarding to `tensorflow_core`."""
    return "tensorflow" + name[len("tensorflow_core"):] if name.split(".")[0] == "tensorflow_core" else name


def with_tf1_names(module: ModuleType, fromlist: tuple[str, ...] | list[str] | None) -> ModuleType:
    """What `from <module> import <fromlist>` should read from: an overlay where TF1_NAMES applies, else `module`."""
    name = module.__name__
    children = {item for item in fromlist or () if f"{name}.{item}" in TF1_NAMES}
    if name not in TF1_NAMES and not children:
        return module
    if name not in _overlays:
        overlay = _Overlay(module)
        for attribute, where in TF1_NAMES.get(name, {}).items():
            provider, _, value = where.partition(":")
            setattr(overlay, attribute, getattr(importlib.import_module(provider), value))
        _overlays[name] = overlay
    overlay = _overlays[name]
    for child in children:  # `from tensorflow.python.framework import graph_util`: the child's overlay
        setattr(overlay, child, with_tf1_names(importlib.import_module(f"{name}.{child}"), ("*",)))
    return overlay


class _Overlay(ModuleType):
    """A real module seen through TensorFlow 1.15's names: what is set here first, then the module itself."""

    def __init__(self, real: ModuleType) -> None:
        super().__init__(real.__name__, real.__doc__)
        self._real = real

    def __getattr__(self, name: str) -> object:
        return getattr(self._real, name)


def wanted_tf1_modules(name: str, fromlist: tuple[str, ...] | list[str] | None) -> list[str]:
    """The registered modules an `import name` / `from name import fromlist` statement asks for."""
    candidates = [name, *(f"{name}.{item}" for item in fromlist or ())]
    return [path for path in TF1_ONLY_MODULES
            if any(path == candidate or path.startswith(candidate + ".") for candidate in candidates)]


def install_tf1_module(path: str) -> ModuleType:
    """Put the module registered as `path` (and any parent packages TensorFlow 2 lacks) into `sys.modules`."""
    if path in sys.modules:
        return sys.modules[path]
    module = importlib.import_module(TF1_ONLY_MODULES[path])
    parent_name, _, child = path.rpartition(".")
    parent = sys.modules.get(parent_name) or _package(parent_name)
    sys.modules[path] = module
    setattr(parent, child, module)
    return module


def _package(name: str) -> ModuleType:
    """An empty package standing in for a TensorFlow 1.15 folder (e.g. tensorflow.examples), linked to its parent."""
    try:
        return importlib.import_module(name)
    except ModuleNotFoundError:
        pass
    package = ModuleType(name, "TensorFlow 1.15 package kept for --tf1 scripts (see npu_tf_profiling.bridge.launch.tf1_modules)")
    package.__path__ = []
    sys.modules[name] = package
    parent_name, _, child = name.rpartition(".")
    setattr(sys.modules.get(parent_name) or _package(parent_name), child, package)
    return package
