"""The `output` (and `tensorboard`) folder: made absolute, created, and proven writable before the first step, with errors that say what is wrong.

A raw ``OSError`` text ("File exists", "No such file or directory") tells the
user nothing about which of the many things a path can be is in the way, so
each case gets its own sentence: a file, a device, a symlink loop, a part of the
path that is not a folder, no permission, a read-only or virtual file system.
Writability is proven with a new file of a random name (``own_files``), so a
link planted under a predictable name can never be emptied.
"""
from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from npu_tf_profiling.config.errors import ProfilingOptionsError
from npu_tf_profiling.raw_format import own_files

KEY = "output"


def _error(path: Path | str, problem: str, key: str = KEY) -> ProfilingOptionsError:
    return ProfilingOptionsError(f"option '{key}': {str(path)!r} {problem}")


def absolute_output(raw: str, cwd: str | os.PathLike[str] | None = None, key: str = KEY) -> Path:
    """``raw`` with ``~`` / ``~user`` expanded, made absolute against ``cwd`` and normalised.

    ``key`` names the option in errors (``output``, or ``tensorboard``, whose folder is made absolute the same way).
    """
    path = Path(raw)
    if raw.startswith("~"):
        try:
            path = path.expanduser()
        except RuntimeError:
            user = raw[1:].split("/", 1)[0]
            who = f"no user {user!r}" if user else "no home folder (HOME is unset)"
            raise _error(raw, f"cannot be expanded: there is {who} to expand {raw.split('/', 1)[0]!r} to", key) from None
    if not path.is_absolute():
        path = Path(cwd if cwd is not None else os.getcwd()) / path
    return Path(os.path.normpath(path))


def _kind(path: Path) -> str | None:
    """What stands at ``path`` when it is not a folder we can use (None: a folder, or nothing yet)."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return "is a symlink to nothing (a dangling link)" if os.path.islink(path) else None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "is a symlink loop"
        if exc.errno == errno.ENOTDIR:
            return f"cannot be a folder: {str(_first_non_folder(path))!r} is a file, not a folder"
        if exc.errno in (errno.EACCES, errno.EPERM):
            return "cannot be reached: permission denied"
        return f"cannot be used: {exc.strerror or exc}"
    if stat.S_ISDIR(info.st_mode):
        return None
    if stat.S_ISCHR(info.st_mode) or stat.S_ISBLK(info.st_mode):
        return "is a device, not a folder"
    if stat.S_ISFIFO(info.st_mode) or stat.S_ISSOCK(info.st_mode):
        return "is a FIFO or socket, not a folder"
    return "exists and is not a folder (it is a file)"


def _first_non_folder(path: Path) -> Path:
    for parent in [*reversed(path.parents), path]:
        if parent.exists() and not parent.is_dir():
            return parent
    return path


def prepare(path: Path, key: str = KEY) -> None:
    """Create ``path`` if missing, and prove new files can be made in it; raises ProfilingOptionsError naming ``key``."""
    kind = _kind(path)
    if kind is not None:
        raise _error(path, kind, key)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise _error(path, f"cannot be created: {_reason(exc)}", key) from None
    try:
        own_files.check_writable(path)
    except OSError as exc:
        raise _error(path, f"is not writable: {_reason(exc)}", key) from None


def _reason(exc: OSError) -> str:
    if exc.errno in (errno.EACCES, errno.EPERM):
        return "permission denied"
    if exc.errno == errno.EROFS:
        return "read-only file system"
    if exc.errno == errno.ENOSPC:
        return "no space left on the device"
    if exc.errno == errno.ENOENT:
        return "it takes no new files (a virtual file system such as /proc or /sys?)"
    if exc.errno == errno.ENOTDIR:
        return "a part of the path is a file, not a folder"
    if exc.errno == errno.ELOOP:
        return "a part of the path is a symlink loop"
    return str(exc.strerror or exc)
