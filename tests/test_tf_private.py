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
SERVED_PATHS = ("bridge/launch/tf1_modules.py", "bridge/launch/contrib/areas.py", "bridge/compat/")


def _resolve(symbol: tf_private.PrivateSymbol) -> object:
    found: object = importlib.import_module(symbol.module)
    for part in filter(None, symbol.attribute.split(".")):
        found = getattr(found, part)
    return found


@pytest.mark.parametrize("symbol", tf_private.PRIVATE_SYMBOLS, ids=lambda s: f"{s.module}:{s.attribute}")
def test_every_registered_private_symbol_exists_on_this_tensorflow(symbol: tf_private.PrivateSymbol) -> None:
    assert _resolve(symbol) is not None


def test_the_installed_tensorflow_is_a_checked_version() -> None:
    import tensorflow as tf

    assert tuple(int(p) for p in tf.__version__.split(".")[:2]) in tf_private.CHECKED_VERSIONS


def _package_modules() -> list[tuple[str, str]]:
    modules = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE).as_posix()
        if relative != "runtime/tf_private.py" and not relative.startswith(SERVED_PATHS):
            modules.append((relative, path.read_text()))
    return modules


def test_no_module_imports_tensorflow_private_modules_but_the_registry() -> None:
    """`tensorflow.python.*` imported outside tf_private (generated protos under tensorflow.core are stable)."""
    offenders = []
    for relative, text in _package_modules():
        for node in ast.walk(ast.parse(text)):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            offenders += [f"{relative}:{node.lineno} {n}" for n in names if n.startswith("tensorflow.python")]
    assert not offenders, offenders


def test_no_module_calls_a_registered_private_method_but_the_registry() -> None:
    private_names = sorted({s.attribute.rsplit(".", 1)[-1] for s in tf_private.PRIVATE_SYMBOLS
                            if s.attribute.rsplit(".", 1)[-1].startswith("_") and not s.attribute.endswith("__")})
    assert "_add_control_input" in private_names  # the check below is built from the registry
    offenders = [f"{relative}:{node.lineno} .{node.attr}" for relative, text in _package_modules()
                 for node in ast.walk(ast.parse(text))
                 if isinstance(node, ast.Attribute) and node.attr in private_names
                 and not (isinstance(node.value, ast.Name) and node.value.id == "self")]
    assert not offenders, offenders
