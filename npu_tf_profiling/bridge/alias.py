"""`install_npu_bridge_alias()`: make `import npu_bridge...` and `import hccl...` resolve to this package.

The compatibility tree (`npu_tf_profiling/bridge/compat/`) holds packages named
`npu_bridge` and `hccl` that mirror upstream's module paths and re-export this
package's implementations. Installing the alias appends that folder to the *end*
of `sys.path`, so an installed Ascend toolkit always wins: the alias is not
installed at all when a real `npu_bridge` is importable, and a real `hccl` found
earlier on the path is used as is. No TensorFlow is imported here.
"""
from __future__ import annotations

import importlib.machinery
import os
import sys
import threading

COMPAT_ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "compat")
ALIASED_PACKAGES = ("npu_bridge", "hccl")

_lock = threading.Lock()


def _real_location(package: str) -> str | None:
    """Where a real (not ours) `package` is or would be imported from, or None."""
    module = sys.modules.get(package)
    if module is not None:
        locations = [module.__file__] if getattr(module, "__file__", None) else list(getattr(module, "__path__", []))
        if locations and all(_is_ours(location) for location in locations):
            return None
        return ", ".join(locations) or repr(module)
    search_path = [entry for entry in sys.path if not _is_ours(entry)]
    for finder in sys.meta_path:
        if finder is importlib.machinery.PathFinder:
            spec = importlib.machinery.PathFinder.find_spec(package, search_path)
        elif hasattr(finder, "find_spec"):
            spec = finder.find_spec(package, None)
        else:
            continue
        if spec is not None:
            return spec.origin or ", ".join(spec.submodule_search_locations or []) or repr(spec)
    return None


def _is_ours(path: str) -> bool:
    resolved, root = os.path.realpath(path or os.curdir), os.path.realpath(COMPAT_ROOT)
    return resolved == root or resolved.startswith(os.path.join(root, ""))


def install_npu_bridge_alias() -> tuple[str, ...]:
    """Serve `npu_bridge` / `hccl` imports from the compatibility layer unless a real npu_bridge exists.

    Returns the top-level packages this layer now serves (empty when a real
    npu_bridge is importable). Idempotent and thread-safe; the launcher
    (`npu-tf-prof run`) calls it before running the script.
    """
    with _lock:
        if _real_location("npu_bridge") is not None:
            return ()
        if COMPAT_ROOT not in sys.path:
            sys.path.append(COMPAT_ROOT)
        return tuple(package for package in ALIASED_PACKAGES if _real_location(package) is None)
