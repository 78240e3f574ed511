"""Resolve a `tensorflow.contrib...` path for `--tf1` user code: a served module, or an error naming what to use.

TensorFlow 2 has no `tf.contrib`; a TF 1.15 script reaches it three ways, and
all three end here: the attribute chain `tf.contrib.layers.xavier_initializer`
(bridge/launch/tf1_api.py's `tf` has `contrib = ContribModule("tensorflow.contrib")`),
`import tensorflow.contrib.slim as slim`, and `from tensorflow.contrib.X import Y`
(the import hook calls `serve_contrib`). Nothing is put into `sys.modules` under
a `tensorflow.contrib` name, so libraries that probe for it (to tell TF 1 from
TF 2) still see TensorFlow 2.

Each served area (`areas.py`) lists the modules whose names it re-exports, its
own additions, and where its `.python.` sub-modules live (tf_slim keeps
contrib's layout: `contrib.layers.python.layers.initializers` is
`tf_slim.layers.initializers`; a flat area's `.python.` modules are the area itself).
Served modules have an `__all__`, so `from tensorflow.contrib.layers import *` binds
their names. An area without a replacement (`seq2seq`, `learn`
beyond ModeKeys, ...) imports as a stub, so a script that only imports it (as
TPU-capable scripts do, using it under a flag) runs as it did on 1.15 without
a TPU; using any of its names raises `ContribRemovedError` naming the name and
what replaces it.
"""
from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

from npu_tf_profiling.bridge.launch.contrib.areas import AREAS, MODULE_ALIASES, REMOVED, Area

PREFIX = "tensorflow.contrib"


class ContribRemovedError(AttributeError):
    """`tf.contrib.X.Y` has no replacement here; the message names it and what to use instead.

    (An import of such a name raises ModuleNotFoundError / ImportError with the same message.)
    """


def contrib_message(path: str) -> str:
    """The error text for `path` (e.g. "tf.contrib.tpu.TPUEstimator"), naming its area's replacement."""
    parts = path.split(".")
    area = parts[2] if len(parts) > 2 else ""
    replacement = REMOVED.get(area) or (AREAS[f"{PREFIX}.{area}"].replacement if f"{PREFIX}.{area}" in AREAS else "")
    replacement = replacement or "the TensorFlow 2 migration guide's table (tf_upgrade_v2 lists each symbol)"
    return f"{path}: not in TensorFlow 2 (tf.contrib was removed; the script targets TensorFlow 1.15); use {replacement}"


def _short(path: str) -> str:
    return "tf" + path[len("tensorflow"):]


class ContribModule(ModuleType):
    """A served `tensorflow.contrib...` module: its area's names, then its sub-modules, else the clear error."""

    def __init__(self, path: str, area: Area) -> None:
        super().__init__(path, f"{_short(path)} for --tf1 scripts (npu_tf_profiling.bridge.launch.contrib)")
        self.__path__: list[str] = []  # a package: `from tensorflow.contrib.layers import python` walks on
        self._area = area

    def __getattr__(self, name: str) -> Any:
        if name == "__all__":  # `from tensorflow.contrib.X import *`
            self.__all__ = self._area.star_names()
            return self.__all__
        if name.startswith("__"):
            raise AttributeError(name)
        value = self._area.lookup(name)
        if value is _MISSING or isinstance(value, ModuleType):
            # A sub-module of ours wins over a source's module of that name (tf_slim.ops.variables.variables is
            # TensorFlow's module; contrib's `framework.python.ops.variables` is tf_slim.ops.variables).
            try:
                value = resolve(f"{self.__name__}.{name}")
            except ModuleNotFoundError as exc:
                if value is _MISSING:
                    raise ContribRemovedError(str(exc)) from None
        setattr(self, name, value)  # found once: later uses are plain attribute reads, and `is` holds
        return value

    def __dir__(self) -> list[str]:
        return sorted(set(super().__dir__()) | set(self._area.names()))

    def __repr__(self) -> str:
        return f"<module {_short(self.__name__)!r} (served by npu_tf_profiling for --tf1)>"


_MISSING = Area.MISSING
_served: dict[str, ModuleType] = {}


def resolve(path: str) -> ModuleType:
    """The module `path` (a `tensorflow.contrib...` name) means here; ModuleNotFoundError naming it otherwise."""
    if path in _served:
        return _served[path]
    area = AREAS.get(path)
    if area is not None:
        area.check(path)
        module: ModuleType = ContribModule(path, area)
    elif path in MODULE_ALIASES:
        module = importlib.import_module(MODULE_ALIASES[path])
    elif path == PREFIX or any(key.startswith(path + ".") for key in (*AREAS, *MODULE_ALIASES)):
        module = ContribModule(path, Area())  # an intermediate package such as tensorflow.contrib.layers.python
    elif path.count(".") == 2 and path.rpartition(".")[2] in REMOVED:
        module = ContribModule(path, Area())  # importable; every name raises (see the module docstring)
    else:
        module = _deep(path)
    _served[path] = module
    return module


def _deep(path: str) -> ModuleType:
    """A sub-module below a served area (`....layers.python.layers.initializers` -> `tf_slim.layers.initializers`).

    An area whose names come from one flat module (`rnn`, `image`...) serves its
    TensorFlow 1.15 sub-modules (`contrib.rnn.python.ops.rnn_cell`) as itself: contrib's
    top module re-exported its `python/` modules' names, so the same names are there.
    """
    owners = [key for key, area in AREAS.items() if area.deep and path.startswith(key + ".")]
    if not owners:
        area = AREAS.get(".".join(path.split(".")[:3]))
        if area is not None and not area.deep and path.split(".")[3] == "python":
            return ContribModule(path, area)
        raise ModuleNotFoundError(contrib_message(_short(path)), name=path)
    owner = max(owners, key=len)
    AREAS[owner].check(owner)
    target = AREAS[owner].deep + path[len(owner):]
    try:
        return importlib.import_module(target)
    except ModuleNotFoundError:
        raise ModuleNotFoundError(contrib_message(_short(path)), name=path) from None


def serve_contrib(name: str, fromlist: Any) -> ModuleType:
    """What `import name` / `from name import fromlist` gives user code; the fromlist names are checked here.

    Checking them now raises the message naming the missing name; otherwise
    Python would turn our AttributeError into a bare "cannot import name".
    """
    module = resolve(name)
    for item in fromlist or ():
        if item == "*":
            continue
        if isinstance(module, ContribModule):
            try:
                getattr(module, item)
            except ContribRemovedError as exc:
                raise ImportError(str(exc), name=f"{name}.{item}") from None
        elif not hasattr(module, item):  # a real module (tf_slim.nets): its sub-module, as `from pkg import sub` does
            try:
                importlib.import_module(f"{module.__name__}.{item}")
            except ModuleNotFoundError:
                raise ImportError(contrib_message(_short(f"{name}.{item}")), name=f"{name}.{item}") from None
    return module

