"""Where the user's script set up its knobs: recorded once per call site, for `advise` (``raw_format.call_sites``).

`advise` must name the line to change, and the profile alone cannot: a
GetNext wait says the pipeline is slow, not which ``.map`` lacks
``num_parallel_calls``. So when TensorFlow (and Keras) load, the public
methods that set those knobs are wrapped (``tf.data.Dataset.map``, ``prefetch``,
``cache``, ``interleave``, the file readers, ``tf.py_function`` and its kin,
``keras.Model.compile``); each call made *directly* by the user's code notes
its file:line and the knob's value, once per site. Calls TensorFlow or Keras
make themselves (Keras' own ``prefetch`` inside ``fit``) are not the user's
and are left out. These are set-up calls, made a few times per job; the
training step never passes here, so a step costs nothing more. A failure to
record is swallowed: the call itself always runs as the user wrote it.

The runs between steps (``runtime.other_runs``) and a Session's training run
note their caller here too (`note_caller`), a few sites per kind at most.
"""
from __future__ import annotations

import functools
from dataclasses import replace
import os
import sys
import threading
from types import ModuleType
from typing import Any, Callable

from npu_tf_profiling.config.notices import user_frame
from npu_tf_profiling.raw_format import call_sites as cs
from npu_tf_profiling.runtime import tf_private
from npu_tf_profiling.runtime.session.base_session import when_module_loads

SITES_PER_KIND = 3  # distinct callers kept per run kind: enough to name the line, bounded for a long job
LOOKS_PER_KIND = 64  # stack walks per run kind at most: a loop's same caller is not looked up on every step
_MARK = "__npu_tf_profiling_call_site__"
AUTOGRAPH_PREFIX = "__autograph_generated_file"  # the file of a function's code as AutoGraph rewrote it
_sites: dict[tuple[str, str, int], cs.CallSite] = {}
_callers_per_kind: dict[str, int] = {}
_looks_per_kind: dict[str, int] = {}
_lock = threading.Lock()


def recorded() -> list[cs.CallSite]:
    """Every site noted so far in this process, in the order first seen."""
    with _lock:
        return list(_sites.values())


def payload() -> dict[str, Any]:
    """call_sites.json's content now."""
    try:
        load: float | None = round(os.getloadavg()[0], 2)
    except OSError:  # no load average on this platform
        load = None
    return cs.encode_call_sites(recorded(), os.cpu_count(), load)


def _note(api: str, frame: Any, args: dict[str, Any]) -> None:
    _note_at(api, frame.f_code.co_filename, frame.f_lineno, frame.f_code.co_name, args)


def _note_at(api: str, file: str, line: int, function: str, args: dict[str, Any]) -> None:
    key = (api, file, line)
    with _lock:
        site = _sites.get(key)
        if site is None:
            _sites[key] = cs.CallSite(api, os.path.abspath(file), line, function, args)
        else:
            _sites[key] = replace(site, calls=site.calls + 1)


def note_caller(api: str, args: dict[str, Any]) -> None:
    """Note the user's line that led here (a run between steps, a training run), at most SITES_PER_KIND per kind."""
    kind = f"{api}/{args.get('kind', '')}"
    try:
        if _callers_per_kind.get(kind, 0) >= SITES_PER_KIND or _looks_per_kind.get(kind, 0) >= LOOKS_PER_KIND:
            return
        _looks_per_kind[kind] = _looks_per_kind.get(kind, 0) + 1
        frame = user_frame()
        before = len(_sites)
        _note(api, frame, args)
        if len(_sites) > before:
            _callers_per_kind[kind] = _callers_per_kind.get(kind, 0) + 1
    except Exception:  # noqa: BLE001 - advice is never worth a failed run
        pass


def _knob(value: Any) -> Any:
    """A knob's value as JSON: tf.data.AUTOTUNE (-1) by name, a tensor or other object by its type."""
    if value is None or isinstance(value, (bool, str, float)):
        return value
    if isinstance(value, int):
        return cs.AUTOTUNE if value == -1 else value
    try:
        number = int(value)
        return cs.AUTOTUNE if number == -1 else number
    except (TypeError, ValueError):
        return type(value).__name__


def _wrap(owner: Any, attribute: str, api: str, read_args: Callable[[tuple, dict], dict[str, Any]]) -> None:
    original = owner.__dict__.get(attribute)
    if original is None or getattr(original, _MARK, False):
        return
    static = isinstance(original, staticmethod)
    target = original.__func__ if static else original

    @functools.wraps(target)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            frame = user_frame()
            if frame is sys._getframe(1):  # called by the user's own code, not by TensorFlow or Keras
                _note(api, frame, read_args(args, kwargs))
        except Exception:  # noqa: BLE001 - advice is never worth a failed call
            pass
        return target(*args, **kwargs)

    setattr(wrapper, _MARK, True)
    setattr(owner, attribute, staticmethod(wrapper) if static else wrapper)


def _argument(position: int, name: str) -> Callable[[tuple, dict], dict[str, Any]]:
    def read(args: tuple, kwargs: dict) -> dict[str, Any]:
        value = kwargs[name] if name in kwargs else args[position] if len(args) > position else None
        return {name: _knob(value)}
    return read


def _no_args(args: tuple, kwargs: dict) -> dict[str, Any]:
    return {}


def _py_function_site() -> tuple[str, int, str]:
    """(file, line, function) of the user's call of a py_function: inside a map function AutoGraph
    rewrote, the original line (the rewritten code's frames are not the user's file)."""
    user = user_frame()
    frame = sys._getframe(2)
    while frame is not None and frame is not user:
        if os.path.basename(frame.f_code.co_filename).startswith(AUTOGRAPH_PREFIX):
            origin = tf_private.autograph_origin(frame)
            if origin is not None:
                return origin[0], origin[1], frame.f_code.co_name.removeprefix("tf__")
        frame = frame.f_back
    return user.f_code.co_filename, user.f_lineno, user.f_code.co_name


def _in_pipeline(args: tuple, kwargs: dict) -> dict[str, Any]:
    """Whether a py_function is called while tf.data traces a map function (it then runs per element, under the GIL)."""
    frame, inside = sys._getframe(2), False
    while frame is not None and not inside:
        inside = f"{os.sep}data{os.sep}ops{os.sep}" in frame.f_code.co_filename
        frame = frame.f_back
    return {"in_pipeline": inside}


def _install_tensorflow(tf: ModuleType) -> None:
    """The tf.data methods and the py_function names, on TensorFlow's public classes and namespace."""
    try:
        for dataset in {tf.data.Dataset, tf.compat.v1.data.Dataset}:
            _wrap(dataset, "map", cs.MAP, _argument(2, "num_parallel_calls"))
            _wrap(dataset, "prefetch", cs.PREFETCH, _argument(1, "buffer_size"))
            _wrap(dataset, "cache", cs.CACHE, _argument(1, "filename"))
            _wrap(dataset, "interleave", cs.INTERLEAVE, _argument(4, "num_parallel_calls"))
            for name in cs.PIPELINE_STEPS:  # where the pipeline ends: a prefetch goes after the last of these
                _wrap(dataset, name, f"Dataset.{name}", _no_args)
        for reader in ("TFRecordDataset", "TextLineDataset", "FixedLengthRecordDataset"):
            for cls in {getattr(tf.data, reader), getattr(tf.compat.v1.data, reader)}:
                _wrap(cls, "__init__", cs.FILE_READER, lambda args, kwargs, reader=reader: {"reader": reader})
        for namespace in (tf, tf.compat.v1):
            for name in ("py_function", "numpy_function", "py_func"):
                if callable(namespace.__dict__.get(name)):
                    _wrap_function(namespace, name)
    except Exception:  # noqa: BLE001 - an unknown TensorFlow: no call sites, advise says the lines are unknown
        pass


def _wrap_function(namespace: ModuleType, name: str) -> None:
    """A module-level function: wrapped in the namespace the user reaches it through."""
    original = namespace.__dict__[name]
    if getattr(original, _MARK, False):
        return

    @functools.wraps(original)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            _note_at(cs.PY_FUNCTION, *_py_function_site(), {**_in_pipeline(args, kwargs), "name": name})
        except Exception:  # noqa: BLE001
            pass
        return original(*args, **kwargs)

    setattr(wrapper, _MARK, True)
    setattr(namespace, name, wrapper)


def _install_keras(keras: ModuleType) -> None:
    try:
        model = getattr(keras, "Model", None)
        for cls in type.mro(model) if isinstance(model, type) else ():
            if "compile" in cls.__dict__:
                _wrap(cls, "compile", cs.COMPILE, _argument(7, "steps_per_execution"))
                return
    except Exception:  # noqa: BLE001
        pass


def install() -> None:
    """Wrap the knobs' APIs when TensorFlow and Keras load (now, if loaded); idempotent, never imports them."""
    when_module_loads("tensorflow", _install_tensorflow)
    when_module_loads("keras", _install_keras)
