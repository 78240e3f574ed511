"""The one patch of `BaseSession.__init__`, and the registry of what wraps it; applied when TensorFlow's session module loads.

Two parts of the package must act when a `tf.compat.v1.Session` is made: a
multi-rank process redirects a default-target session to its rank server
(`bridge` ranks, before TensorFlow makes the session), and profiling attaches to
the session made (`session.attach_on_creation`). Each patching `BaseSession.__init__` on its
own made their order depend on which was installed first, and left two wrappers
to find when debugging. So there is one patch, and the wrappers it runs are
registered here by name, in the fixed order `WRAPPER_ORDER` (outermost first).
The patch is on `BaseSession`, so Session, InteractiveSession and the sessions
MonitoredSession and Estimator create are all covered.

Importing TensorFlow costs seconds; the offline reports, the CLI and the start-up
hook (.pth) must not pay it. (`when_module_loads` waits so for any module: the
call sites `advise` reads are hooked when TensorFlow and Keras load.) So instead of patching eagerly we wait on the import
system: when `tensorflow.python.client.session` is executed (by `import
tensorflow`, whenever the user does it), we patch `BaseSession` right after. If it
is already loaded, we patch at once.
"""
from __future__ import annotations

import functools
import importlib.abc
import importlib.machinery
import sys
from types import ModuleType
from typing import Any, Callable, Optional, Sequence

from npu_tf_profiling.runtime.tf_private import SESSION_MODULE

SessionInit = Callable[[Any, str, Any, Any], None]
"""`BaseSession.__init__`'s call: (session, target, graph, config)."""
SessionInitWrapper = Callable[[SessionInit, Any, str, Any, Any], None]
"""A wrapper gets the init to call (the next wrapper, or TensorFlow's own) and the call's arguments, which it may change."""

WRAPPER_ORDER = (
    "rank_job",  # a multi-rank process: a default-target session is made on this rank's server (bridge ranks)
    "profiling",  # the session's profiling request, resolved and attached once the session exists (session.attach_on_creation)
)
_MARK = "__npu_tf_profiling_session_init__"
_WRAPPERS: dict[str, SessionInitWrapper] = {}


def wrap_session_init(name: str, wrapper: SessionInitWrapper) -> None:
    """Run `wrapper` around every `BaseSession.__init__` from now on (idempotent per name; no TensorFlow import)."""
    if name not in WRAPPER_ORDER:
        raise ValueError(f"session init wrapper {name!r} is not in WRAPPER_ORDER {WRAPPER_ORDER}")
    _WRAPPERS.setdefault(name, wrapper)
    when_session_module_loads(_patch_base_session)


def session_init_wrappers() -> tuple[str, ...]:
    """The registered wrappers' names, outermost first."""
    return tuple(name for name in WRAPPER_ORDER if name in _WRAPPERS)


def _patch_base_session(module: ModuleType) -> None:
    base = module.BaseSession
    tensorflow_init = base.__init__
    if getattr(tensorflow_init, _MARK, False):
        return

    @functools.wraps(tensorflow_init)
    def __init__(self: Any, target: str = "", graph: Any = None, config: Any = None) -> None:
        wrappers = [_WRAPPERS[name] for name in session_init_wrappers()]
        _call_through(wrappers, tensorflow_init, self, target, graph, config)

    setattr(__init__, _MARK, True)
    base.__init__ = __init__


def _call_through(wrappers: list[SessionInitWrapper], tensorflow_init: SessionInit,
                  session: Any, target: str, graph: Any, config: Any) -> None:
    if not wrappers:
        tensorflow_init(session, target, graph, config)
        return
    outer, inner = wrappers[0], wrappers[1:]
    outer(functools.partial(_call_through, inner, tensorflow_init), session, target, graph, config)


# ----------------------------------------------------------------------------- waiting for a module to load
class _PatchAfterExec(importlib.abc.Loader):
    """Delegates to the module's own loader, then runs the callbacks on the module (once: the finder forgets them)."""

    def __init__(self, inner: importlib.abc.Loader, finder: "_ModuleFinder", fullname: str) -> None:
        self._inner = inner
        self._finder = finder
        self._fullname = fullname

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> Optional[ModuleType]:
        return self._inner.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self._inner.exec_module(module)  # type: ignore[attr-defined]
        for callback in self._finder.loaded(self._fullname):
            callback(module)


class _ModuleFinder(importlib.abc.MetaPathFinder):
    """Hooks the loader of each awaited module, with every callback registered until it loads; leaves the
    import path when nothing is awaited any more. A module is forgotten only once executed, not when found:
    a probe (`importlib.util.find_spec("keras")`, as TensorFlow makes) loads nothing."""

    def __init__(self) -> None:
        self.awaited: dict[str, list[Callable[[ModuleType], None]]] = {}

    def find_spec(self, fullname: str, path: Optional[Sequence[str]], target: Any = None) -> Optional[importlib.machinery.ModuleSpec]:
        if fullname not in self.awaited:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path)
        if spec is None or spec.loader is None:
            return spec
        spec.loader = _PatchAfterExec(spec.loader, self, fullname)
        return spec

    def loaded(self, fullname: str) -> list[Callable[[ModuleType], None]]:
        """The callbacks awaiting `fullname`, forgotten now that it loaded."""
        callbacks = self.awaited.pop(fullname, [])
        if not self.awaited and self in sys.meta_path:
            sys.meta_path.remove(self)  # never again on the import path
        return callbacks


def when_module_loads(fullname: str, on_loaded: Callable[[ModuleType], None]) -> None:
    """Call `on_loaded(module)` now if the module `fullname` is loaded, else right after it loads (never imports it)."""
    module = sys.modules.get(fullname)
    if module is not None:
        on_loaded(module)
        return
    finder = next((f for f in sys.meta_path if isinstance(f, _ModuleFinder)), None)
    if finder is None:
        finder = _ModuleFinder()
        sys.meta_path.insert(0, finder)
    callbacks = finder.awaited.setdefault(fullname, [])
    if on_loaded not in callbacks:
        callbacks.append(on_loaded)


def when_session_module_loads(on_loaded: Callable[[ModuleType], None]) -> None:
    """Call `on_loaded(session_module)` now if TensorFlow is loaded, else right after it loads."""
    when_module_loads(SESSION_MODULE, on_loaded)
