"""TensorFlow's private API, used through one registry (`runtime/tf_private.py`).

On the installed TensorFlow (2.15 in `make test`, the newest in `make check-latest`)
every registered symbol must resolve: an upgrade that moves one fails here, by
name, rather than profiling silently recording nothing. And no package module
may reach TensorFlow's private API except through the registry, so the list
stays the whole truth.
"""
from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

from npu_tf_profiling.runtime import tf_private

PACKAGE = Path(tf_private.__file__).resolve().parents[1]
# Modules that *serve* TensorFlow 1.15's and upstream's module paths to users' scripts: the paths are names they
# provide, not private API they call.
SERVED_PATHS = ("bridge/launch/tf1_modules.py", "bridge/launch/contrib/areas.py", "bridge/launch/keras_paths.py",
                "bridge/compat/")
# TensorFlow's private packages, and those of the libraries that shipped with it (tf.estimator, Keras 2).
PRIVATE_PACKAGES = ("tensorflow.python", "tensorflow_estimator.python", "keras.src")


def _resolve(symbol: tf_private.PrivateSymbol) -> object:
    found: object = importlib.import_module(symbol.module)
    for part in filter(None, symbol.attribute.split(".")):
        found = getattr(found, part)
    return found


def _installed() -> tuple[int, int]:
    import tensorflow as tf

    major, minor = tf.__version__.split(".")[:2]
    return int(major), int(minor)


@pytest.mark.parametrize("symbol", tf_private.PRIVATE_SYMBOLS, ids=lambda s: f"{s.module}:{s.attribute}")
def test_every_registered_private_symbol_exists_on_this_tensorflow(symbol: tf_private.PrivateSymbol) -> None:
    if symbol.until is not None and _installed() > symbol.until:
        assert tf_private.optional_module(symbol.module) is None or _resolve(symbol) is not None
        pytest.skip(f"{symbol.module} ships with TensorFlow <= {symbol.until[0]}.{symbol.until[1]} only")
    assert _resolve(symbol) is not None


def test_the_installed_tensorflow_is_a_checked_version() -> None:
    assert _installed() in tf_private.CHECKED_VERSIONS


def _package_modules() -> list[tuple[str, str]]:
    modules = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE).as_posix()
        if relative != "runtime/tf_private.py" and not relative.startswith(SERVED_PATHS):
            modules.append((relative, path.read_text()))
    return modules


def test_no_module_imports_tensorflow_private_modules_but_the_registry() -> None:
    """`tensorflow.python.*` (or tf.estimator's, Keras 2's insides) imported outside tf_private (generated protos
    under tensorflow.core are stable)."""
    offenders = []
    for relative, text in _package_modules():
        for node in ast.walk(ast.parse(text)):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            offenders += [f"{relative}:{node.lineno} {n}" for n in names if n.startswith(PRIVATE_PACKAGES)]
    assert not offenders, offenders


def test_private_module_paths_in_strings_are_registered_ones() -> None:
    """A private module named in a string (an `importlib` call, a frame's file) is the registry's, so no use hides
    from the import check above: every such string in the package is defined in tf_private."""
    offenders = [f"{relative}:{node.lineno} {node.value}" for relative, text in _package_modules()
                 for node in ast.walk(ast.parse(text))
                 if isinstance(node, ast.Constant) and isinstance(node.value, str)
                 and node.value.startswith(PRIVATE_PACKAGES) and " " not in node.value]
    assert not offenders, offenders
    registered = {s.module for s in tf_private.PRIVATE_SYMBOLS}
    assert {*tf_private.BODY_MAKERS, *tf_private.ESTIMATOR_MODULES.values(), tf_private.FEEDING_QUEUE_RUNNER[0],
            tf_private.KERAS_LOSS_SCALE_MODULE, tf_private.KERAS_LEGACY_OPTIMIZER_MODULE} <= registered


def test_the_body_makers_are_told_apart_by_their_file_names() -> None:
    """`tracing` tells a loop body from a branch by the file of the frame that made it: the registered modules' files."""
    for module in tf_private.BODY_MAKERS:
        file_name = Path(importlib.import_module(module).__file__).name
        assert tf_private.body_maker(file_name) == module.rsplit(".", 1)[-1]
    assert tf_private.body_maker("control_flow_ops.py") is None


def test_no_module_calls_a_registered_private_method_but_the_registry() -> None:
    private_names = sorted({s.attribute.rsplit(".", 1)[-1] for s in tf_private.PRIVATE_SYMBOLS
                            if s.attribute.rsplit(".", 1)[-1].startswith("_") and not s.attribute.endswith("__")})
    assert "_add_control_input" in private_names  # the check below is built from the registry
    offenders = [f"{relative}:{node.lineno} .{node.attr}" for relative, text in _package_modules()
                 for node in ast.walk(ast.parse(text))
                 if isinstance(node, ast.Attribute) and node.attr in private_names
                 and not (isinstance(node.value, ast.Name) and node.value.id == "self")]
    assert not offenders, offenders
