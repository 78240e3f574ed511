"""`install_npu_bridge_alias()`: make `import npu_bridge...`, `import npu_device...` and `import hccl...` resolve here.

The compatibility tree (`npu_tf_profiling/bridge/compat/`) holds packages named
`npu_bridge` (Ascend's TF1 adapter), `npu_device` (its TF2 adapter) and `hccl`
that mirror upstream's module paths and re-export this package's
implementations, plus the fallback `npu_convert_dropout` module that ModelZoo
TF2 folders usually vendor. Installing the alias appends that folder to the
*end* of `sys.path`, so an installed Ascend toolkit always wins: the alias is
not installed at all when a real `npu_bridge` or `npu_device` is importable
(either means the Ascend adapter is there, and mixing ours with it would be
worse than either), and a real `hccl` (or a script folder's own
`npu_convert_dropout.py`) found earlier on the path is used as is. No
TensorFlow is imported here.
"""
from __future__ import annotations

import importlib.machinery
import os
import sys
import threading

COMPAT_ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "compat")
ALIASED_PACKAGES = ("npu_bridge", "npu_device", "hccl", "npu_convert_dropout")
ADAPTERS = ("npu_bridge", "npu_device")
"""Ascend's own adapters: if either is really installed, nothing is aliased."""

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
    """Serve `npu_bridge` / `npu_device` / `hccl` imports from the compatibility layer unless a real adapter exists.

    Returns the top-level modules this layer now serves (empty when a real
    npu_bridge or npu_device is importable). Idempotent and thread-safe; the launcher
    (`npu-tf-prof run`) calls it before running the script.
    """
    with _lock:
        if any(_real_location(adapter) is not None for adapter in ADAPTERS):
            return ()
        if COMPAT_ROOT not in sys.path:
            sys.path.append(COMPAT_ROOT)
        return tuple(package for package in ALIASED_PACKAGES if _real_location(package) is None)
