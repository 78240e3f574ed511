"""Which profiling request wins: the session's NpuOptimizer entry or the environment.

Implements upstream GE's `ProfilingManager::InitFromOptions` precedence (see `docs/options.md`):

1. A session with `profiling_mode` on and non-empty options wins.
2. Otherwise the env vars apply when `PROFILING_MODE` is `true` (any case;
   upper case gets a deprecation note). Empty `PROFILING_OPTIONS` means the defaults.
3. A session with profiling on but empty options, and no env request, means the
   default option set (source "session").
4. A session with profiling off does not block the env vars.
5. `PROFILING_MODE` of `false`, empty or unset means off; `dynamic` means no static
   request (the runtime then watches PROFILING_DYNAMIC_CONFIG); anything else is an
   error naming the variable.

When rule 1 wins while the environment also asks for profiling, the env request
is dropped with one note, and the Resolution keeps what was dropped so info.json
can say so: a user who exported PROFILING_OPTIONS must not wonder why their keys
had no effect.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from npu_tf_profiling.config.errors import ProfilingDeprecationWarning, ProfilingOptionsError, refuse_request
from npu_tf_profiling.config.notices import warn_user
from npu_tf_profiling.config.options import ProfilingOptions
from npu_tf_profiling.config.session_proto import SessionProfilingRequest, read_request

ENV_MODE = "PROFILING_MODE"
ENV_OPTIONS = "PROFILING_OPTIONS"

SOURCE_SESSION = "session"
SOURCE_ENV = "env"
SOURCE_TF2 = "start_tf2_profiling"


@dataclass(frozen=True)
class Resolution:
    """The effective options, where they came from, and the absolute output folder."""

    options: ProfilingOptions
    source: str
    output_dir: Path
    # (variable, value) pairs of an env request the session's options overrode; empty when none.
    ignored_env: tuple[tuple[str, str], ...] = ()

    def describe(self) -> str:
        """The human summary `make demo` prints and the runtime logs once."""
        lines = [f"profiling: on (source: {self.source})", f"  output dir: {self.output_dir}"]
        lines += [f"  {key} = {value!r}" for key, value in sorted(self.options.to_dict().items())]
        return "\n".join(lines)


def _env_mode(environ: Mapping[str, str]) -> str:
    """'true', 'false' or 'dynamic'; raises for anything else."""
    raw = environ.get(ENV_MODE, "")
    value = raw.strip()
    lowered = value.lower()
    if lowered in ("", "false"):
        if value and value != lowered:
            _note(f"{ENV_MODE}={value} is deprecated; use {ENV_MODE}=false")
        return "false"
    if lowered in ("true", "dynamic"):
        if value != lowered:
            _note(f"{ENV_MODE}={value} is deprecated; use {ENV_MODE}={lowered}")
        return lowered
    raise ProfilingOptionsError(f"environment variable {ENV_MODE}={raw!r} is invalid; expected 'true', 'false' or 'dynamic'")


def _note(message: str) -> None:
    warn_user(message, ProfilingDeprecationWarning)


def _resolved(options: ProfilingOptions, source: str, ignored_env: tuple[tuple[str, str], ...] = ()) -> Resolution:
    for note in options.notes:
        _note(note)
    return Resolution(options=options, source=source, output_dir=options.resolve_output(), ignored_env=ignored_env)


def _env_request(environ: Mapping[str, str]) -> tuple[tuple[str, str], ...]:
    """The profiling variables of an env request (PROFILING_MODE set to anything but off), else ()."""
    if environ.get(ENV_MODE, "").strip().lower() in ("", "false"):
        return ()
    return tuple((name, environ[name]) for name in (ENV_MODE, ENV_OPTIONS) if name in environ)


def ignored_env_note(ignored_env: tuple[tuple[str, str], ...], source: str = SOURCE_SESSION) -> str:
    """The one-line note for an env request the session's (or `source`'s) options overrode."""
    names = " and ".join(f"{name}={value}" if name == ENV_MODE else name for name, value in ignored_env)
    whose = "the session's" if source == SOURCE_SESSION else f"{source}'s"
    return f"{names} ignored: {whose} profiling_options take precedence (see docs/options.md)"


def resolve_profiling(session_config: Any = None, environ: Mapping[str, str] | None = None) -> Resolution | None:
    """The effective profiling request for a session, or None when profiling is off.

    Raises ProfilingOptionsError for bad options, a bad PROFILING_MODE, or an unusable
    output folder, so the mistake surfaces before the first training step.
    """
    return resolve_request(read_request(session_config), environ)


def resolve_request(request: SessionProfilingRequest, environ: Mapping[str, str] | None = None, *,
                    source: str = SOURCE_SESSION) -> Resolution | None:
    """`resolve_profiling` for a request made in code: a session's entry, or a TensorFlow 2 script's
    `start_tf2_profiling` call (`source` names which), under the same precedence over the env vars."""
    try:
        return _resolve(request, os.environ if environ is None else environ, source)
    except ProfilingOptionsError as exc:
        raise refuse_request(exc) from None


def _resolve(request: SessionProfilingRequest, environ: Mapping[str, str], source: str) -> Resolution | None:
    session_on = request.present and request.profiling_mode
    if session_on and request.profiling_options.strip():
        options = ProfilingOptions.parse(request.profiling_options, origin=f"{source} profiling_options")
        ignored_env = _env_request(environ)
        if ignored_env:
            warn_user(f"npu_tf_profiling: {ignored_env_note(ignored_env, source)}")
        return _resolved(options, source, ignored_env)
    mode = _env_mode(environ)
    if mode == "true":
        return _resolved(ProfilingOptions.parse(environ.get(ENV_OPTIONS, ""), origin=ENV_OPTIONS), SOURCE_ENV)
    if session_on:
        return _resolved(ProfilingOptions.parse(None), source)
    return None
