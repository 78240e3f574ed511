"""The raw-data writer: append-only, crash-safe, never fatal to the job.

Every record is handed to the OS with one `os.write` on an O_APPEND descriptor
as soon as the iteration ends. A SIGKILL therefore loses at most the iteration in
flight (the OS keeps what was written), and a torn line can only be the last one,
which the readers skip. Any OSError (disk full, permission lost) or reaching
`storage_limit` turns collection off with one warning; training goes on.
"""
from __future__ import annotations

import os
import threading
import warnings
from pathlib import Path


class StorageBudget:
    """Bytes left under `storage_limit` for one PROF_* folder (shared by its writers)."""

    def __init__(self, limit_bytes: int | None) -> None:
        self.limit_bytes = limit_bytes
        self.used_bytes = 0

    def allows(self, size: int) -> bool:
        return self.limit_bytes is None or self.used_bytes + size <= self.limit_bytes


class AppendOnlyWriter:
    """Whole records appended to `path`, each with a single os.write."""

    def __init__(self, path: Path, budget: StorageBudget) -> None:
        self.path = path
        self._budget = budget
        self._fd: int | None = None
        self._lock = threading.Lock()
        self.stopped_reason: str | None = None

    def append(self, line: bytes) -> bool:
        """Write one already-encoded record; False (after one warning) once collection has stopped."""
        if self.stopped_reason is not None:
            return False
        with self._lock:
            if not self._budget.allows(len(line)):
                self._stop(f"storage_limit reached ({self._budget.limit_bytes} bytes)")
                return False
            try:
                if self._fd is None:
                    self.path.parent.mkdir(parents=True, exist_ok=True)
                    self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
                written = os.write(self._fd, line)
            except OSError as exc:
                self._stop(f"cannot write {self.path}: {exc.strerror or exc}")
                return False
            self._budget.used_bytes += written
            if written != len(line):
                self._stop(f"short write to {self.path} (disk full?)")
                return False
        return True

    def _stop(self, reason: str) -> None:
        self.stopped_reason = reason
        warnings.warn(
            f"npu_tf_profiling: collection stopped: {reason}. Training continues; the data written so far stays reportable.",
            RuntimeWarning,
            stacklevel=4,
        )
        self.close()

    def close(self) -> None:
        if self._fd is not None:
            try:
                os.close(self._fd)
            except OSError:
                pass
            self._fd = None
