"""The raw-data writer: append-only, crash-safe, never fatal to the job.

Every record (a batch of step-trace rows, a task_trace record) is handed to the
OS with one `os.write` on an O_APPEND descriptor as soon as it is made. A SIGKILL
therefore loses only what had not been handed over yet (the OS keeps what was
written), and a torn record can only be the last one, which the readers skip. Any OSError (disk full, permission lost) or reaching
`storage_limit` turns collection off with one warning; training goes on.

A file deleted while the job runs (the output folder removed by hand or by a
clean-up job) would otherwise swallow every later record without a word: the
open descriptor keeps writing into a file no name leads to. So at most once a
second, and when closing, the writer checks that its file still has a name; if
not, it creates the file again, copies back what the descriptor still holds
(everything recorded so far), warns once, and goes on appending there.
"""
from __future__ import annotations

import os
import threading
import time
import warnings
from pathlib import Path
from typing import Callable, Optional

from npu_tf_profiling.raw_format import own_files

# Seconds between checks that the file still exists (one fstat; the appends in between cost nothing extra).
DELETION_CHECK_INTERVAL_S = 1.0
_COPY_CHUNK = 1 << 20


class StorageBudget:
    """Bytes left under `storage_limit` for one PROF_* folder (shared by its writers)."""

    def __init__(self, limit_bytes: int | None) -> None:
        self.limit_bytes = limit_bytes
        self.used_bytes = 0
        # The stop reasons already shown: the folder's writers share one limit, so reaching it is said once.
        self.reasons_shown: set[str] = set()

    def allows(self, size: int) -> bool:
        return self.limit_bytes is None or self.used_bytes + size <= self.limit_bytes


class AppendOnlyWriter:
    """Whole records appended to `path`, each with a single os.write."""

    def __init__(self, path: Path, budget: StorageBudget) -> None:
        self.path = path
        self._budget = budget
        self._fd: int | None = None
        self._lock = threading.Lock()
        self._next_check = 0.0
        self.stopped_reason: str | None = None
        # Called after the file was created again (see the module docstring), e.g. to rewrite
        # the metadata that was deleted with it.
        self.on_recreated: Optional[Callable[[], None]] = None

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
                    self._fd = self._open()
                elif time.monotonic() >= self._next_check:
                    self._recreate_if_deleted()
                written = os.write(self._fd, line)
            except OSError as exc:
                self._stop(f"cannot write {self.path}: {exc.strerror or exc}")
                return False
            self._budget.used_bytes += written
            if written != len(line):
                self._stop(f"short write to {self.path} (disk full?)")
                return False
        return True

    def _open(self) -> int:
        own_files.make_dir(self.path.parent)
        # Readable too: after a deletion the records are copied back from this descriptor.
        return own_files.open_append(self.path)

    def _recreate_if_deleted(self) -> None:
        """If the file lost its last name, write it again from the descriptor (raises OSError)."""
        assert self._fd is not None
        self._next_check = time.monotonic() + DELETION_CHECK_INTERVAL_S
        if os.fstat(self._fd).st_nlink > 0:
            return
        old, self._fd = self._fd, self._open()
        try:
            offset = 0
            while chunk := os.pread(old, _COPY_CHUNK, offset):
                os.write(self._fd, chunk)
                offset += len(chunk)
        finally:
            os.close(old)
        warnings.warn(
            f"npu_tf_profiling: {self.path} was deleted while the job ran (the output folder removed?); "
            f"it is written again, with the {offset} bytes recorded so far. Training continues.",
            RuntimeWarning,
            stacklevel=5,
        )
        if self.on_recreated is not None:
            self.on_recreated()

    def _stop(self, reason: str) -> None:
        self.stopped_reason = reason
        if reason in self._budget.reasons_shown:
            self._close_fd()
            return
        self._budget.reasons_shown.add(reason)
        warnings.warn(
            f"npu_tf_profiling: collection stopped: {reason}. Training continues; the data written so far stays reportable.",
            RuntimeWarning,
            stacklevel=4,
        )
        self._close_fd()

    def close(self) -> None:
        with self._lock:
            if self._fd is None:
                return
            try:
                if self.stopped_reason is None:
                    self._recreate_if_deleted()  # so the reports built at close find the data
            except OSError:
                pass  # nothing more can be saved; the reports will say the data is missing
            self._close_fd()

    def _close_fd(self) -> None:
        if self._fd is not None:
            try:
                os.close(self._fd)
            except OSError:
                pass
            self._fd = None
