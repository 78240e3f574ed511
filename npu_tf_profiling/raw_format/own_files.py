"""Files the package makes, and only those: how every writer creates, appends to, replaces and removes a file.

Output folders are shared (a team's `/shared/prof`, a dynamic config's folder),
so a name the package is about to use may already exist as something it did not
make: a symlink planted there, a FIFO, a user's own file. Writing through such a
name would empty or tamper with a file elsewhere. So every writer goes through
here, and the rules are:

- a new file is created with ``O_CREAT | O_EXCL | O_NOFOLLOW``: an existing name
  is never opened by accident (a temporary name is random, so it cannot be
  guessed and planted in advance);
- an existing file is appended to only when it is a regular file, opened with
  ``O_NOFOLLOW``;
- a final name is replaced (``os.replace``) or removed only when it is not a
  symlink and not something other than a regular file;
- a folder is used only when it is a real folder, not a link to one (the
  ``output`` the user names is the exception: that link is the user's choice);
- every file is created with mode 0o666 and every folder with 0o777, less the
  process umask, as ``open()`` and ``mkdir`` do: one permission rule, so on
  shared storage others read the reports exactly when they read the raw data.

A refusal is a ``ForeignFileError`` (an ``OSError``, so each writer's existing
"stop collecting with one warning" or "reports not written" path handles it)
that names the path and what it is.
"""
from __future__ import annotations

import errno
import os
import secrets
import stat
from pathlib import Path

from npu_tf_profiling.raw_format.errors import ForeignFileError

FILE_MODE = 0o666  # less the umask, as open() gives
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
_NEW_FLAGS = os.O_CREAT | os.O_EXCL | _NOFOLLOW | _CLOEXEC
_TEMP_ATTEMPTS = 100


def describe_foreign(path: Path) -> str | None:
    """Why ``path`` must not be written through ("a symlink to ..."), or None when it is absent or a regular file."""
    try:
        info = os.lstat(path)
    except FileNotFoundError:
        return None
    if stat.S_ISLNK(info.st_mode):
        try:
            target = os.readlink(path)
        except OSError:
            target = "?"
        return f"a symlink (to {target})"
    if stat.S_ISREG(info.st_mode):
        return None
    if stat.S_ISDIR(info.st_mode):
        return "a folder"
    if stat.S_ISFIFO(info.st_mode):
        return "a FIFO"
    if stat.S_ISCHR(info.st_mode) or stat.S_ISBLK(info.st_mode):
        return "a device"
    if stat.S_ISSOCK(info.st_mode):
        return "a socket"
    return "not a regular file"


def _refuse(path: Path, what: str) -> ForeignFileError:
    return ForeignFileError(
        errno.EEXIST,
        f"{path} is {what} that npu_tf_profiling did not create; it is left untouched "
        "(remove it, or choose another output folder)",
    )


def refuse_foreign(path: Path) -> None:
    """Raise ``ForeignFileError`` when ``path`` exists as anything but a regular file."""
    what = describe_foreign(path)
    if what is not None:
        raise _refuse(path, what)


def make_dir(path: Path) -> Path:
    """Create ``path`` (and missing parents); refuse when it is a link or a non-folder."""
    path = Path(path)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise _refuse(path, describe_foreign(path) or "not a folder") from None
    if os.path.islink(path):
        raise _refuse(path, describe_foreign(path) or "a symlink")
    return path


def create_new(path: Path, flags: int = os.O_WRONLY) -> int:
    """A descriptor of a file this call creates; an existing name (a planted link too) is refused."""
    try:
        return os.open(path, flags | _NEW_FLAGS, FILE_MODE)
    except FileExistsError:
        raise _refuse(path, describe_foreign(path) or "a file") from None


def open_append(path: Path) -> int:
    """A read-write, append-only descriptor of ``path``, created if missing; never through a link."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_NONBLOCK | _NOFOLLOW | _CLOEXEC, FILE_MODE)
    except OSError as exc:
        what = describe_foreign(path)
        if what is not None:
            raise _refuse(path, what) from None
        raise exc
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise _refuse(path, describe_foreign(path) or "not a regular file")
    os.set_blocking(fd, True)
    return fd


def create_temp(folder: Path, prefix: str, suffix: str = ".tmp", flags: int = os.O_WRONLY) -> tuple[int, Path]:
    """A new file under a random name in ``folder``: (descriptor, path)."""
    for _ in range(_TEMP_ATTEMPTS):
        path = Path(folder) / f"{prefix}{secrets.token_hex(6)}{suffix}"
        try:
            return os.open(path, flags | _NEW_FLAGS, FILE_MODE), path
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, f"no free temporary name in {folder}")


def replace(tmp: Path, final: Path) -> Path:
    """Move the file ``tmp`` (made here) over ``final``, unless ``final`` is something the package did not make."""
    refuse_foreign(final)
    os.replace(tmp, final)
    return final


def remove(path: Path) -> bool:
    """Remove a regular file the package wrote earlier; a link or other kind of file there is refused."""
    refuse_foreign(path)
    try:
        os.unlink(path)
    except FileNotFoundError:
        return False
    return True


def check_writable(folder: Path) -> None:
    """Prove ``folder`` takes new files, with a random name that cannot be planted in advance (raises OSError)."""
    fd, path = create_temp(folder, ".npu_tf_profiling_write_test_", "")
    os.close(fd)
    os.unlink(path)
