"""Installing the tf.function transform, and the request the traced steps follow.

The transform goes into TensorFlow's private ``FUNC_GRAPH_TRANSFORMS`` list
(``tensorflow.python.eager.polymorphic_function.transform``) when TensorFlow
loads. That module, its list, and the two places that call it are the same in
every version checked (`tf_private.CHECKED_VERSIONS`); on another version, or where the
list is gone, nothing is installed, and a profiling request gets one warning
saying why its TensorFlow 2 steps are not traced (the Session path still works).

Which request the steps follow, decided at the first traced training step (so a
bad request is an error before that step runs, at the user's `fit` or call):
`start_tf2_profiling` when the script called it (the session-level entry of
TensorFlow 2; it takes precedence over the env vars, as a session's options do),
else ``PROFILING_MODE=true`` / ``PROFILING_OPTIONS``, else
``PROFILING_MODE=dynamic`` (the controller the Session path uses too).
"""
from __future__ import annotations

import importlib
import json
import threading
from typing import Any, Mapping

from npu_tf_profiling.config import ENV_MODE, Resolution
from npu_tf_profiling.config.notices import warn_user
from npu_tf_profiling.config.resolution import SOURCE_TF2, resolve_profiling, resolve_request
from npu_tf_profiling.config.session_proto import SessionProfilingRequest
from npu_tf_profiling.runtime.tf_private import CHECKED_VERSIONS, TRANSFORM_MODULE, VERSIONS_MODULE

_lock = threading.Lock()
_installed: Any = None  # the StepTransform in TensorFlow's list, once installed
_not_installed: str | None = None  # why not, once tried
_explicit: Resolution | None = None
_explicit_set = False
_source: Any = None
_source_decided = False


def install_function_transform() -> str | None:
    """Put the transform into TensorFlow's list (once); the reason when it cannot be, else None.

    The lock guards the state only, never the import: called before TensorFlow is loaded
    (`start_tf2_profiling` ahead of ``import tensorflow``), the import runs TensorFlow's
    session module, whose load hook calls this function again in the same thread, and a
    lock held across it would deadlock the script at its first line (it did).
    """
    global _installed, _not_installed
    with _lock:
        if _installed is not None or _not_installed is not None:
            return _not_installed
    try:
        transforms = importlib.import_module(TRANSFORM_MODULE).FUNC_GRAPH_TRANSFORMS
        missing = None
    except (ImportError, AttributeError) as exc:
        transforms, missing = None, f"TensorFlow's graph-transform hook ({TRANSFORM_MODULE}.FUNC_GRAPH_TRANSFORMS) is missing ({exc})"
    with _lock:
        if _installed is not None or _not_installed is not None:  # installed by the load hook during that import
            return _not_installed
        version = _tensorflow_version()
        if version is not None and version[:2] not in CHECKED_VERSIONS:
            _not_installed = f"TensorFlow {'.'.join(map(str, version))} is not one this package was checked with (2.15 to 2.21)"
        elif transforms is None:
            _not_installed = missing
        else:
            _installed = _LoadedOnFirstTrace()
            transforms.append(_installed)
        return _not_installed


class _LoadedOnFirstTrace:
    """The list entry: it imports the transform (and TensorFlow's API with it) at the first trace.

    It is installed while `import tensorflow` is still running, when that API is not all there yet.
    """

    def __init__(self) -> None:
        self._transform: Any = None

    def __call__(self, graph: Any) -> None:
        if self._transform is None:
            from npu_tf_profiling.runtime.functions.transform import StepTransform

            self._transform = StepTransform(current_source)
        self._transform(graph)


def _tensorflow_version() -> tuple[int, ...] | None:
    """TensorFlow's (major, minor), or None when it cannot be read.

    From ``tensorflow.python.framework.versions``, not ``tensorflow.__version__``: the load
    hook runs while ``import tensorflow`` is still executing, before the top-level module
    has its ``__version__`` (the check was never applied there, which is the usual path).
    """
    try:
        text = str(importlib.import_module(VERSIONS_MODULE).__version__)
    except (ImportError, AttributeError):
        return None
    parts = []
    for piece in text.split(".")[:2]:
        digits = "".join(c for c in piece if c.isdigit())
        parts.append(int(digits) if digits else 0)
    return tuple(parts)


def start_tf2_profiling(profiling_options: str | bytes | Mapping[str, Any] | None = None, enable_profiling: bool = True) -> Resolution | None:
    """Profile the TensorFlow 2 training steps traced from now on (`tf.function` loops, Keras `fit`).

    ``profiling_options`` is the same options JSON (or a dict) as everywhere, checked now:
    a bad one raises ProfilingOptionsError here. Like a session's options, these take
    precedence over PROFILING_MODE/PROFILING_OPTIONS; ``enable_profiling=False`` (or
    empty options with profiling on) leaves it to them, as upstream. Returns the
    Resolution in force (None: profiling off). Steps traced before this call keep
    what they had. The PROF folder is made at the first traced training step.
    """
    global _explicit, _explicit_set, _source, _source_decided
    if isinstance(profiling_options, Mapping):
        text = json.dumps(dict(profiling_options))
    elif isinstance(profiling_options, bytes):
        text = profiling_options.decode("utf-8", errors="replace")
    else:
        text = profiling_options or ""
    resolution = resolve_request(SessionProfilingRequest(present=True, profiling_mode=bool(enable_profiling), profiling_options=text),
                                 source=SOURCE_TF2)
    with _lock:
        _explicit, _explicit_set = resolution, True
        _source, _source_decided = None, False
    reason = install_function_transform()
    if reason is not None and resolution is not None:
        warn_user(f"npu_tf_profiling: TensorFlow 2 steps are not traced: {reason}; Session-based training still is")
    elif resolution is not None:
        _time_host_reads()  # from now on: a loop's first batch is read before its step is traced
    return resolution


def current_source() -> Any:
    """The CollectionSource the next traced step follows, or None (decided once; see the module docstring)."""
    global _source, _source_decided
    with _lock:
        if _source_decided:
            return _source
        _source = _decide_source()
        _source_decided = True
        return _source


def _decide_source() -> Any:
    from npu_tf_profiling.runtime.collection import Collection, StaticSource
    from npu_tf_profiling.runtime.dynamic import controller_for, dynamic_config_path

    resolution = _explicit if _explicit_set else resolve_profiling(None)
    if resolution is not None:
        collection = Collection.start(resolution)
        if not collection.training_trace:
            return None
        options = resolution.options
        _time_host_reads()
        return StaticSource(collection, options.fp_point or "", options.bp_point or "")
    dynamic = dynamic_config_path()
    if dynamic is None:
        return None
    _time_host_reads()
    return controller_for(dynamic)


def _time_host_reads() -> None:
    from npu_tf_profiling.runtime.functions.host_reads import install_host_reads

    install_host_reads(current_source)


def warn_if_requested_but_not_installed(reason: str | None) -> None:
    """At TensorFlow's load: a missing hook is worth a word only to a job that asked for profiling."""
    import os

    if reason is not None and os.environ.get(ENV_MODE, "").strip().lower() in ("true", "dynamic"):
        warn_user(f"npu_tf_profiling: TensorFlow 2 steps are not traced: {reason}; Session-based training still is")
