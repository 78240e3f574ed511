"""How npu_bridge names without a CPU/GPU meaning behave: a note once, or a clear error.

Ascend scripts call things that only make sense on the NPU: system start/stop,
compile scopes, data dump, gradient split strategies. Refusing them would stop
scripts that are otherwise fine, so they are accepted and do nothing; the person
running the script is told once per process per name, because a silent no-op
would hide that e.g. no dump is written.

NPU kernels with no TensorFlow kernel are different: pretending would change what
the script computes. They import fine (so a script that never calls them runs),
and calling one raises `NpuOnlyOpError` naming the op and what to use instead.
What each name does here is listed in `docs/npu_bridge_surface.md`.
"""
from __future__ import annotations

import functools
from typing import Any, Callable, NoReturn

from npu_tf_profiling.config.notices import warn_user


class NpuNoOpNote(RuntimeWarning):
    """An NPU-only npu_bridge name was called and did nothing on CPU/GPU (shown once per name and process)."""


class NpuOnlyOpError(NotImplementedError):
    """An Ascend NPU kernel with no TensorFlow equivalent was called; the message names an alternative."""


def note_once(name: str, what_happens: str) -> None:
    """Warn `name: what_happens` at the script's line, the first time `name` is used in this process."""
    warn_user(f"npu_tf_profiling: {name}: {what_happens}", NpuNoOpNote)


def npu_only_kernel(name: str, alternative: str) -> Callable[..., NoReturn]:
    """A stand-in for the NPU kernel `name` that raises when called (never at import)."""

    def kernel(*args: Any, **kwargs: Any) -> NoReturn:
        raise NpuOnlyOpError(
            f"{name} is an Ascend NPU kernel with no CPU/GPU TensorFlow implementation; "
            f"on CPU/GPU use {alternative}"
        )

    kernel.__name__ = kernel.__qualname__ = name.rsplit(".", 1)[-1]
    kernel.__doc__ = f"Ascend NPU kernel `{name}`: raises NpuOnlyOpError here. Use {alternative}."
    return kernel


def accepted_no_op(name: str, what_happens: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Decorator: the wrapped npu_bridge function notes `name` once per process, then runs its CPU/GPU body."""

    def decorate(func: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            note_once(name, what_happens)
            return func(*args, **kwargs)

        return wrapper

    return decorate
