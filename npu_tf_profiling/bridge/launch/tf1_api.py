"""`npu-tf-prof run --tf1`: `import tensorflow as tf` in the user's code gives the TensorFlow 1.x API.

Ascend ModelZoo scripts are written for TensorFlow 1.15, where `tf.Session`,
`tf.placeholder` and `tf.train.AdamOptimizer` are top-level names and graphs are
built, not executed eagerly. TensorFlow 2 keeps that API as
`tensorflow.compat.v1` and switches the 2.x behaviours off with
`disable_v2_behavior()`.

Only the *user's* modules (the script and its own sibling modules, i.e. anything
outside the standard library and site-packages) get the 1.x namespace for
`import tensorflow` / `from tensorflow import X`; libraries keep the real
module, so Keras, the Estimator and this package see the TensorFlow they were
written for. Modules and names TensorFlow 1.15 had and TensorFlow 2 dropped or moved
(`bridge/launch/tf1_modules.py`, `tensorflow_core.*` included) are served to that code too, and so is
`tf.contrib` where a maintained replacement exists (`bridge/launch/contrib/`); any other
`tf.contrib` name fails with a message naming it and what replaces it.
"""
from __future__ import annotations

import builtins
import os
import site
import sys
import sysconfig
from types import ModuleType
from typing import Any, Callable

from npu_tf_profiling.bridge.launch.contrib.paths import resolve, serve_contrib
from npu_tf_profiling.bridge.launch.tf1_modules import install_tf1_module, tf1_name, wanted_tf1_modules, with_tf1_names

class TF1Module(ModuleType):
    """The `tensorflow` seen by user code: the v1 API first, then the real module (tf.compat, tf.python...)."""

    def __init__(self, real: ModuleType, v1: ModuleType) -> None:
        super().__init__("tensorflow", v1.__doc__)
        for attribute in ("__path__", "__file__", "__spec__", "__loader__", "__package__", "__version__"):
            if hasattr(real, attribute):
                setattr(self, attribute, getattr(real, attribute))
        self.compat = real.compat  # tf.compat.v1 / tf.compat.v2 / as_bytes, as in TensorFlow 1.15
        self.contrib = resolve("tensorflow.contrib")
        self._v1 = v1
        self._real = real

    def __getattr__(self, name: str) -> Any:
        try:
            return getattr(self._v1, name)
        except AttributeError:
            return getattr(self._real, name)

    def __dir__(self) -> list[str]:
        return sorted(set(dir(self._v1)) | {"compat", "contrib"})


_TOP_LEVEL = frozenset(("tensorflow", "tensorflow_core"))
_state: dict[str, Any] = {}  # "module": the TF1Module, once enable_tf1() has run


def library_roots() -> tuple[str, ...]:
    """Where library code lives: the standard library, site-packages, and this package (also from a checkout)."""
    paths = sysconfig.get_paths()
    roots = {paths[key] for key in ("stdlib", "platstdlib", "purelib", "platlib") if key in paths}
    package = sys.modules[__name__.partition(".")[0]]  # loaded before any of its modules: no import needed
    roots.add(os.path.dirname(os.path.abspath(package.__file__)))  # the package's folder, however deep this module is
    roots.update(site.getsitepackages())
    if site.ENABLE_USER_SITE:
        roots.add(site.getusersitepackages())
    return tuple(os.path.join(os.path.realpath(root), "") for root in roots)


def is_user_code(importer_globals: Any, roots: tuple[str, ...], cache: dict[str, bool]) -> bool:
    if not isinstance(importer_globals, dict):
        return False
    if importer_globals.get("__name__") == "__main__":
        return True
    filename = importer_globals.get("__file__")
    if not filename:
        return False
    user = cache.get(filename)
    if user is None:
        user = not os.path.realpath(filename).startswith(roots)
        cache[filename] = user
    return user


def _tf1_import(original: Callable[..., Any], module: TF1Module) -> Callable[..., Any]:
    roots = library_roots()
    cache: dict[str, bool] = {}

    def __import__(name: str, globals: Any = None, locals: Any = None, fromlist: Any = (), level: int = 0) -> Any:
        if level == 0 and name.split(".")[0] in _TOP_LEVEL and is_user_code(globals, roots, cache):
            name = tf1_name(name)
            if name == "tensorflow.contrib" or name.startswith("tensorflow.contrib."):
                served = serve_contrib(name, fromlist)
                return served if fromlist else module
            for path in wanted_tf1_modules(name, fromlist):
                install_tf1_module(path)
            imported = original(name, globals, locals, fromlist, level)
            # `import tensorflow[.x] [as y]` and `from tensorflow import X` bind the top-level module.
            return module if (name == "tensorflow" or not fromlist) else with_tf1_names(imported, fromlist)
        return original(name, globals, locals, fromlist, level)

    return __import__


def enable_tf1() -> TF1Module:
    """Switch TensorFlow to 1.x behaviour and give user code the v1 namespace; idempotent."""
    if "module" in _state:
        return _state["module"]
    import tensorflow as real

    v1 = real.compat.v1
    v1.disable_v2_behavior()
    module = TF1Module(real, v1)
    builtins.__import__ = _tf1_import(builtins.__import__, module)
    _state["module"] = module
    return module


def v1_namespace() -> ModuleType:
    """What `tf` means in `from npu_bridge.npu_init import *`: the --tf1 module if on, else tensorflow.compat.v1.

    Upstream's star import exports `tf` (TensorFlow 1.15's v1 API), which
    replaces the script's own `tf`; it must stay the 1.x API.
    """
    if "module" in _state:
        return _state["module"]
    import tensorflow.compat.v1 as v1

    return v1
