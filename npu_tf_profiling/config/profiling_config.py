"""`ProfilingConfig`, with upstream npu_bridge's signature.

**Departure from upstream (on purpose):** upstream stores the options text
unchecked; a typo surfaces, if ever, as a trace with no data. We validate when the
object is built, so the error points at the line that built it.
"""
from __future__ import annotations

from typing import Any, Mapping

from npu_tf_profiling.config.errors import ProfilingDeprecationWarning, ProfilingOptionsError, refuse_request
from npu_tf_profiling.config.notices import warn_user
from npu_tf_profiling.config.options import ProfilingOptions


class ProfilingConfig:
    """Whether to profile, and the options JSON (`profiling_options`) to profile with."""

    def __init__(self, enable_profiling: bool = False, profiling_options: str | bytes | Mapping[str, Any] | None = None) -> None:
        if not isinstance(enable_profiling, bool):
            raise TypeError(f"ProfilingConfig: enable_profiling must be a bool, got {enable_profiling!r} ({type(enable_profiling).__name__})")
        self._enable_profiling = enable_profiling
        # Validate now even when profiling is off: a bad text is a bug either way.
        try:
            self._options = ProfilingOptions.parse(profiling_options, origin="ProfilingConfig profiling_options")
        except ProfilingOptionsError as exc:
            raise refuse_request(exc) from None
        self._options_given = bool(profiling_options)
        for note in self._options.notes:
            warn_user(note, ProfilingDeprecationWarning)

    @property
    def enable_profiling(self) -> bool:
        return self._enable_profiling

    @property
    def options(self) -> ProfilingOptions:
        return self._options

    @property
    def profiling_options(self) -> str:
        """The options as the JSON text the session carries ("" when none were given: the defaults)."""
        return self._options.to_json() if self._options_given else ""

    def __repr__(self) -> str:
        return f"ProfilingConfig(enable_profiling={self._enable_profiling!r}, profiling_options={self.profiling_options!r})"
