"""TF 2.6-era Keras module paths, served to the script's own modules: `from keras.utils import control_flow_util`.

ModelZoo TF2 scripts were written for TensorFlow 2.4-2.6, whose Keras kept its
implementation modules at `keras.utils.control_flow_util`, `keras.layers.core`,
`keras.engine.base_layer`, `keras.utils.tf_utils`, ... The vendored
`npu_convert_dropout.py` (33 files) imports three of them at its top. Keras 2.13+
moved every such module under `keras.src`, so those imports fail on 2.15 before
any NPU name is reached.

When the script's own code (not a library: see bridge/launch/tf1_api.py's `is_user_code`)
imports a `keras.` module that does not exist, and `keras.src.` has it, that
module is put into `sys.modules` under the old name too (the same module object,
so patching `Dropout.call` patches Keras' Dropout). `keras.layers.core` is
special: in 2.6 it also held Dropout, Flatten, Reshape, ..., which 2.15 keeps in
other sub-packages, so it is served as `keras.src.layers.core` plus every
public `keras.layers` name. A path that exists is never touched, so this acts
only where the import would otherwise fail; that is why `npu-tf-prof run` does
it for every script without a flag (unlike `--tf1`, which changes what a working
`import tensorflow` means). Keras 3 has no `keras.src` layout of this kind: there
nothing is served and the import fails as it would without the launcher.
"""
from __future__ import annotations

import builtins
import importlib
import importlib.util
import sys
import threading
from types import ModuleType
from typing import Any, Callable

from npu_tf_profiling.bridge.launch.tf1_api import is_user_code, library_roots

LAYERS_CORE = "keras.layers.core"
_MARK = "__npu_tf_profiling_keras_paths__"
_lock = threading.Lock()


def serve_keras_2_6_paths() -> None:
    """Install the import hook (idempotent); it costs one check per `keras.` import of the script's own modules."""
    with _lock:
        if not getattr(builtins.__import__, _MARK, False):
            builtins.__import__ = _keras_import(builtins.__import__)


def legacy_module(path: str) -> ModuleType | None:
    """The module a TF 2.6-era `path` means on this Keras, put into sys.modules under `path`; None if there is none."""
    if path in sys.modules:
        return sys.modules[path]
    if not path.startswith("keras.") or path.startswith("keras.src."):
        return None
    parent_name, _, child = path.rpartition(".")
    parent = sys.modules.get(parent_name) if parent_name == "keras" else _existing_or_legacy(parent_name)
    if parent is None:
        return None
    target = "keras.src." + path[len("keras."):]
    if not _exists(target):
        return None
    module = _layers_core(importlib.import_module(target)) if path == LAYERS_CORE else importlib.import_module(target)
    sys.modules[path] = module
    setattr(parent, child, module)
    return module


def _existing_or_legacy(path: str) -> ModuleType | None:
    if path in sys.modules:
        return sys.modules[path]
    if _exists(path):
        return importlib.import_module(path)
    return legacy_module(path)


def _exists(path: str) -> bool:
    try:
        return importlib.util.find_spec(path) is not None
    except (ImportError, ValueError):  # a parent package is missing
        return False


def _layers_core(src_core: ModuleType) -> ModuleType:
    """Keras 2.6's `keras.layers.core`: 2.15's core layers plus the public layers 2.6 kept there (Dropout, Flatten...)."""
    import keras.layers

    module = ModuleType(LAYERS_CORE, "Keras 2.6's keras.layers.core, served by npu_tf_profiling (bridge/launch/keras_paths.py)")
    module.__dict__.update({k: v for k, v in vars(src_core).items() if not k.startswith("__")})
    module.__path__ = []  # type: ignore[attr-defined]  # its sub-modules are served as aliases too, never loaded twice
    module.__getattr__ = lambda name: getattr(keras.layers, name)  # type: ignore[attr-defined]  # PEP 562
    return module


def _keras_import(original: Callable[..., Any]) -> Callable[..., Any]:
    roots = library_roots()
    cache: dict[str, bool] = {}

    def __import__(name: str, globals: Any = None, locals: Any = None, fromlist: Any = (), level: int = 0) -> Any:
        wanted = name.startswith("keras.") or (name == "keras" and fromlist)
        if level == 0 and wanted and is_user_code(globals, roots, cache):
            _serve(name, fromlist)
        return original(name, globals, locals, fromlist, level)

    setattr(__import__, _MARK, True)
    return __import__


def _serve(name: str, fromlist: Any) -> None:
    """Serve `name` and the `fromlist` items that are missing sub-modules; anything that exists is left alone."""
    if name != "keras" and not _exists(name):
        legacy_module(name)
    module = sys.modules.get(name)
    for item in fromlist or ():
        if item != "*" and (module is None or not hasattr(module, item)):
            legacy_module(f"{name}.{item}")
