"""Installs the Session integration when TensorFlow's session module loads, without importing TensorFlow.

Importing TensorFlow costs seconds; the offline reports, the CLI and the start-up
hook (.pth) must not pay it. So instead of patching eagerly we wait on the import
system: when `tensorflow.python.client.session` is executed (by `import
tensorflow`, whenever the user does it), we patch `BaseSession` right after. If it
is already loaded, we patch at once.
"""
from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
from types import ModuleType
from typing import Any, Callable, Optional, Sequence

SESSION_MODULE = "tensorflow.python.client.session"


class _PatchAfterExec(importlib.abc.Loader):
    """Delegates to TensorFlow's own loader, then runs `on_loaded(module)`."""

    def __init__(self, inner: importlib.abc.Loader, on_loaded: Callable[[ModuleType], None]) -> None:
        self._inner = inner
        self._on_loaded = on_loaded

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> Optional[ModuleType]:
        return self._inner.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self._inner.exec_module(module)  # type: ignore[attr-defined]
        self._on_loaded(module)


class _SessionModuleFinder(importlib.abc.MetaPathFinder):
    def __init__(self, on_loaded: Callable[[ModuleType], None]) -> None:
        self._on_loaded = on_loaded

    def find_spec(self, fullname: str, path: Optional[Sequence[str]], target: Any = None) -> Optional[importlib.machinery.ModuleSpec]:
        if fullname != SESSION_MODULE:
            return None
        sys.meta_path.remove(self)  # one-shot: never again on the import path
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None:
            return spec
        spec.loader = _PatchAfterExec(spec.loader, self._on_loaded)
        return spec


def when_session_module_loads(on_loaded: Callable[[ModuleType], None]) -> None:
    """Call `on_loaded(session_module)` now if TensorFlow is loaded, else right after it loads."""
    module = sys.modules.get(SESSION_MODULE)
    if module is not None:
        on_loaded(module)
        return
    if not any(isinstance(finder, _SessionModuleFinder) for finder in sys.meta_path):
        sys.meta_path.insert(0, _SessionModuleFinder(on_loaded))
