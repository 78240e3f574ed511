"""Custom markers with torch_npu's names: ``mark``, ``range_start``/``range_end``, and ``mstx_range``.

Turned on by the ``msproftx`` option (also spelled ``mstx``, torch_npu's name). Scripts keep their
markers in place whether profiling is on or not, so a call while off must cost nothing a user
could measure: it is one check of a module flag (``_on``) and a return. While on, a call takes
the time (epoch µs, the clock the step trace uses), the thread and the message, and appends
one tuple to a deque (thread-safe, no lock); the runtime drains the deque into ``mstx.jsonl``
(``raw_format.layout``) in batches, so no call ever waits for the disk. torch_npu's domain filters
(``mstx_domain_include`` / ``mstx_domain_exclude``) drop a filtered marker at the call, as cheaply: one
set lookup, and a filtered ``range_start`` returns 0 like a call while off.

Usage::

    from npu_tf_profiling import mstx

    mstx.mark("epoch 3 starts")
    rid = mstx.range_start("prepare batch", domain="input")
    ...
    mstx.range_end(rid)

    with mstx.mstx_range("augment"):      # or @mstx.mstx_range("augment") on a function
        ...
"""
from __future__ import annotations

import contextlib
import itertools
import threading
import time
from collections import deque
from typing import Optional

DEFAULT_DOMAIN = "default"  # torch_npu's name for the domain of a marker given none
KIND_MARK = "mark"
KIND_RANGE = "range"

# (kind, message, domain, tid, start_us, end_us); appended by the API, drained by the runtime.
Record = tuple[str, str, str, int, float, float]

_on = False
_only: Optional[frozenset[str]] = None  # mstx_domain_include: the only domains recorded (None: all)
_left_out: frozenset[str] = frozenset()  # mstx_domain_exclude
_records: deque[Record] = deque()
_open_ranges: dict[int, tuple[str, str, int, float]] = {}
_range_ids = itertools.count(1)


def mark(message: str, domain: Optional[str] = None) -> None:
    """An instant marker: ``message`` at this moment, on this thread."""
    if not _on:
        return
    domain = domain or DEFAULT_DOMAIN
    if domain in _left_out or (_only is not None and domain not in _only):
        return
    now = time.time_ns() / 1000.0
    _records.append((KIND_MARK, str(message), domain, threading.get_ident(), now, now))


def range_start(message: str, domain: Optional[str] = None) -> int:
    """Open a range; returns its id for ``range_end`` (0 while markers are off or its domain is filtered out:
    ``range_end(0)`` does nothing)."""
    if not _on:
        return 0
    domain = domain or DEFAULT_DOMAIN
    if domain in _left_out or (_only is not None and domain not in _only):
        return 0
    range_id = next(_range_ids)
    _open_ranges[range_id] = (str(message), domain, threading.get_ident(), time.time_ns() / 1000.0)
    return range_id


def range_end(range_id: int) -> None:
    """Close the range ``range_start`` opened (from any thread: the range keeps the thread that opened it)."""
    if not _on:
        return
    opened = _open_ranges.pop(range_id, None)
    if opened is None:
        return
    message, domain, tid, start_us = opened
    _records.append((KIND_RANGE, message, domain, tid, start_us, time.time_ns() / 1000.0))


class mstx_range(contextlib.ContextDecorator):  # torch_npu's spelling
    """A range around a ``with`` block or around each call of a decorated function."""

    def __init__(self, message: str, domain: Optional[str] = None) -> None:
        self.message = message
        self.domain = domain
        self._ids: list[int] = []  # a stack: the same object may be re-entered (recursion, nested with)

    def __enter__(self) -> "mstx_range":
        self._ids.append(range_start(self.message, self.domain))
        return self

    def __exit__(self, *exc: object) -> None:
        range_end(self._ids.pop())


# ----- for the runtime (runtime/host/collection.py) -----------------------------------------------
def enable_recording(only: Optional[frozenset[str]] = None, left_out: frozenset[str] = frozenset()) -> None:
    """Record from now on: the domains in `only` (None: every domain) but those in `left_out`."""
    global _on, _only, _left_out
    _only, _left_out = only, left_out
    _on = True


def disable_recording() -> None:
    global _on
    _on = False
    _open_ranges.clear()


def drain_records() -> list[Record]:
    """The records made since the last drain (popleft is atomic: a marker made meanwhile waits for the next)."""
    taken: list[Record] = []
    while True:
        try:
            taken.append(_records.popleft())
        except IndexError:
            return taken


__all__ = ["mark", "range_start", "range_end", "mstx_range", "DEFAULT_DOMAIN"]
