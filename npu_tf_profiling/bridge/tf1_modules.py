"""Modules TensorFlow 1.15 had under `tensorflow.` that TensorFlow 2 dropped or moved, served to `--tf1` user code.

Real ModelZoo-TensorFlow scripts import them at the top (`from
tensorflow.examples.tutorials.mnist import input_data`, `from tensorflow.python
import graph_util`), so without them a script dies before building a graph.
Each entry names the module path a script imports and where its TensorFlow 2
(or this package's) implementation lives. They are put into `sys.modules`
only when user code imports them; libraries never see them.
"""
from __future__ import annotations

import importlib
import sys
from types import ModuleType

# module path TensorFlow 1.15 had -> the module that provides it here
TF1_ONLY_MODULES: dict[str, str] = {
    "tensorflow.examples.tutorials.mnist.input_data": "npu_tf_profiling.bridge.mnist_input_data",
    "tensorflow.python.graph_util": "tensorflow._api.v2.compat.v1.graph_util",  # tf.compat.v1.graph_util
}


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
    package = ModuleType(name, "TensorFlow 1.15 package kept for --tf1 scripts (see npu_tf_profiling.bridge.tf1_modules)")
    package.__path__ = []
    sys.modules[name] = package
    parent_name, _, child = name.rpartition(".")
    setattr(sys.modules.get(parent_name) or _package(parent_name), child, package)
    return package
