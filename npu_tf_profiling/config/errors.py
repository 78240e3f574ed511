"""Errors and warnings of the configuration room."""
from __future__ import annotations

from typing import Any

# A bad value is quoted in its error up to this many characters: a 10 MB value must not fill the terminal.
SHOWN_CHARS = 100


def shown(value: Any) -> str:
    """``repr(value)`` for an error message, cut to about SHOWN_CHARS characters.

    Never raises: ``repr`` of an int of over 4,300 digits does in Python 3.11+.
    """
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 300:
        return f"a {len(str(abs(value) >> (value.bit_length() - 300)))}+ digit number"
    try:
        text = repr(value)
    except Exception:  # noqa: BLE001 - an odd object's repr must not replace the real error
        return f"a {type(value).__name__}"
    if len(text) <= SHOWN_CHARS:
        return text
    return f"{text[:SHOWN_CHARS]}... ({len(text)} characters)"


class ProfilingOptionsError(ValueError):
    """Bad profiling input: names the key (or variable/file), the bad value and what is allowed.

    A ValueError so existing `except ValueError` handlers in training scripts keep working.
    """


_requests_refused: list[str] = []


def refuse_request(error: ProfilingOptionsError) -> ProfilingOptionsError:
    """Record that a profiling request was refused for bad input, and give the error back to raise.

    The user has seen the error; the note at exit must not then claim that nothing
    was profiled for some other reason (see ``runtime.unclaimed_request``).
    """
    _requests_refused.append(str(error))
    return error


def requests_refused() -> bool:
    """Whether this process refused a profiling request for bad input."""
    return bool(_requests_refused)


class ProfilingDeprecationWarning(FutureWarning):
    """A legacy spelling was accepted; the message names the modern one.

    A FutureWarning (shown by default), because these notes are for the person
    running the script, not only for library developers.
    """


class EstimatorUnavailableError(ImportError):
    """tf.estimator is gone (TensorFlow 2.16+), but an Estimator-only API was used."""
