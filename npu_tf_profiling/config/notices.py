"""Warnings for the person running the script: shown at their own line, each once per process.

A warning raised deep inside the profiler (or inside TensorFlow, which created
the session for an Estimator) would otherwise show a file of this package as
its location, which tells the user nothing about which of their lines asked for
what. So every note walks the stack to the first frame outside this package,
TensorFlow and the standard library (the line that built the config, created
the session or ran the step) and is reported there with
`warnings.warn_explicit`. Several sessions often ask for the same thing, so a
note is shown once per process however many sessions repeat it.
"""
from __future__ import annotations

import os
import sys
import sysconfig
import threading
import warnings
from types import FrameType

# Packages whose frames are never "the user's line" (this one, and those that create sessions for the user).
_LIBRARY_PACKAGES = ("npu_tf_profiling", "tensorflow", "tensorflow_estimator", "keras", "tf_keras")
_STDLIB = os.path.normpath(sysconfig.get_paths()["stdlib"]) + os.sep
_AUTOGRAPH_PREFIX = "__autograph_generated_file"

_shown: set[tuple[type[Warning], str]] = set()
_shown_lock = threading.Lock()


def warn_user(message: str, category: type[Warning] = RuntimeWarning) -> None:
    """Warn `message` at the user's line, unless this process has already shown it."""
    key = (category, message)
    with _shown_lock:
        if key in _shown:
            return
        _shown.add(key)
    frame = user_frame()
    if _is_library_file(frame.f_code.co_filename, _library_dirs()):
        # No line of the user's is running (the ring reader's thread, the exit): a line of this package or of
        # the interpreter's start-up would be shown as if it were the cause; the message says it all.
        warn_without_source(message, category)
        return
    # No module_globals: its loader lookup raises for `python -c` code; the file name is enough for the source line.
    warnings.warn_explicit(message, category, frame.f_code.co_filename, frame.f_lineno, module=frame.f_globals.get("__name__", "<string>"))


def warn_without_source(message: str, category: type[Warning]) -> None:
    """Warn `message` with no source line: shown as ``npu_tf_profiling:0: Category: message``."""
    warnings.warn_explicit(message, category, "npu_tf_profiling", 0, module="npu_tf_profiling")


def forget_shown() -> None:
    """Show every note again, as a fresh process would (the test suite calls it between tests)."""
    with _shown_lock:
        _shown.clear()


def user_frame() -> FrameType:
    """The innermost frame whose file is the user's: not this package, TensorFlow or the standard library.

    Code with no file (`<string>`, `<stdin>`) is skipped too, since dataclasses generate
    their `__init__` that way; so a `python -c` program is found as the outermost frame,
    which is the fallback.
    """
    library_dirs = _library_dirs()
    frame = sys._getframe(1)
    outermost = frame
    while frame is not None:
        if not _is_library_file(frame.f_code.co_filename, library_dirs):
            return frame
        outermost = frame
        frame = frame.f_back
    return outermost


def _library_dirs() -> tuple[str, ...]:
    """The folders of the library packages loaded now (never imports one)."""
    dirs = []
    for name in _LIBRARY_PACKAGES:
        path = getattr(sys.modules.get(name), "__file__", None)
        if path:
            dirs.append(os.path.dirname(os.path.abspath(path)) + os.sep)
    return tuple(dirs)


def _is_library_file(filename: str, library_dirs: tuple[str, ...]) -> bool:
    if filename.startswith("<"):  # <frozen ...>, and <string> of generated code (a dataclass __init__)
        return True
    if os.path.basename(filename).startswith(_AUTOGRAPH_PREFIX):  # a tf.function's code as AutoGraph rewrote it
        return True
    path = os.path.abspath(filename)
    if path.startswith(library_dirs):
        return True
    parts = path.split(os.sep)
    return path.startswith(_STDLIB) and "site-packages" not in parts and "dist-packages" not in parts
