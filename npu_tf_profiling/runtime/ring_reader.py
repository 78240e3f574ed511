"""The process's ring reader: one thread drains every live ring (sessions' and tf.functions') each DRAIN_INTERVAL_S.

Both training styles keep their stamps in an in-graph ring whose rows must reach
the raw file while the job runs, so that a SIGKILL loses at most the last
DRAIN_INTERVAL_S of iterations and the training thread never pauses to drain.
One daemon thread serves every reader (a `session.recorder.Recorder`, a
`functions.reader` model): a thread each would contend for the GIL and for the
same raw file. At exit the thread stops first, then each reader is closed (its
last rows written) before the reports are built.
"""
from __future__ import annotations

import atexit
import threading
import weakref
from typing import Protocol

from npu_tf_profiling.runtime.profiling_run import before_exit_reports

DRAIN_INTERVAL_S = 0.5
# anomaly_capture's detection sees an iteration only once it is drained: with the option on, drains come this often.
FAST_DRAIN_INTERVAL_S = 0.1


class BackgroundRead(Protocol):
    """What the ring reader drains: a session's recorder, or a tf.function's ring (`functions.reader`)."""

    def read_in_background(self) -> None: ...

    def close(self) -> None: ...


_LIVE: "weakref.WeakSet[BackgroundRead]" = weakref.WeakSet()


def read_in_the_background(reader: BackgroundRead) -> None:
    """Drain `reader` each DRAIN_INTERVAL_S on the process's ring reader, and close it (its last rows) at exit."""
    _LIVE.add(reader)
    _Reader.ensure_started()


def drain_often() -> None:
    """From now on, drain every FAST_DRAIN_INTERVAL_S (anomaly_capture is on; with it off nothing changes)."""
    _Reader.interval_s = FAST_DRAIN_INTERVAL_S


def stop_reading(reader: BackgroundRead) -> None:
    """The reader is closed or abandoned: the thread no longer drains it."""
    _LIVE.discard(reader)


class _Reader(threading.Thread):
    """The process's ring reader thread (see the module docstring)."""

    _started: "_Reader | None" = None
    interval_s = DRAIN_INTERVAL_S
    _stop_registered = False
    _lock = threading.Lock()

    def __init__(self) -> None:
        super().__init__(name="npu_tf_profiling ring reader", daemon=True)
        self._stop_event = threading.Event()

    @classmethod
    def ensure_started(cls) -> None:
        with cls._lock:
            if cls._started is None or not cls._started.is_alive():
                if not cls._stop_registered:  # also when no PROF folder (whose exit handler stops it) exists
                    atexit.register(cls.stop)
                    cls._stop_registered = True
                cls._started = cls()
                cls._started.start()

    @classmethod
    def stop(cls) -> None:
        """At exit: no reader turn may be under way while the interpreter shuts down."""
        with cls._lock:
            reader, cls._started = cls._started, None
        if reader is not None:
            reader._stop_event.set()
            reader.join(timeout=5.0)

    def run(self) -> None:
        while not self._stop_event.wait(self.interval_s):
            try:
                readers = list(_LIVE)
            except RuntimeError:  # the set changed while copied: next turn
                continue
            for reader in readers:
                reader.read_in_background()


def _drain_all() -> None:
    """At exit: stop the reader, then save the last rows of the rings still open, before the reports are written."""
    _Reader.stop()
    for reader in list(_LIVE):
        reader.close()


before_exit_reports(_drain_all)
