"""``gc_detect_threshold``: every Python GC pause at or above the threshold, timed from ``gc.callbacks``.

The callback runs inside the collector, on whatever thread allocated, possibly
while that thread holds a writer's lock: so it only appends a tuple to a list
(atomic under the GIL) and the host recorder's thread writes the list out
(``drain``). A pause under the threshold costs two clock reads and a compare.
"""
from __future__ import annotations

import gc
import time
from typing import Any

from npu_tf_profiling.raw_format.host_samples import encode_gc_pause


class GcPauseRecorder:
    def __init__(self, threshold_ms: float) -> None:
        self.threshold_s = threshold_ms / 1e3
        self._started: tuple[float, float] | None = None
        self._pending: list[tuple[float, float, int, int, int]] = []
        self.installed = False

    def install(self) -> None:
        gc.callbacks.append(self._callback)
        self.installed = True

    def remove(self) -> None:
        if self.installed and self._callback in gc.callbacks:
            gc.callbacks.remove(self._callback)
        self.installed = False

    def _callback(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._started = (time.time(), time.perf_counter())
            return
        started, self._started = self._started, None
        if started is None:
            return  # installed during a collection
        duration = time.perf_counter() - started[1]
        if duration >= self.threshold_s:
            self._pending.append((started[0] * 1e6, duration * 1e6, int(info.get("generation", -1)),
                                  int(info.get("collected", 0)), int(info.get("uncollectable", 0))))

    def drain(self) -> bytes:
        """The pauses recorded since the last drain, encoded (b"" when none)."""
        pending, self._pending = self._pending, []
        return b"".join(encode_gc_pause(*pause) for pause in pending)
