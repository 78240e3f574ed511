"""All-or-nothing file writes: the one implementation every writer uses.

Reports and metadata are rewritten while other processes may read them, and the
writer may be killed at any moment. So a file is written under a temporary name
in its own folder, flushed and fsync'ed, then moved into place with
``os.replace``: a reader sees the old file or the new one, never half of one,
and a failed write leaves no temporary file behind.
"""
from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import IO, Any, Optional


class AtomicFile:
    """A file written under a temporary name; ``commit`` moves it into place, ``abort`` removes it.

    ``commit`` may name a different final path, for writers that only know the
    name once the content is complete (a timeline split into parts).
    """

    def __init__(self, path: Path, *, encoding: Optional[str] = "utf-8") -> None:
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{self.path.name}.", suffix=".tmp", dir=self.path.parent)
        self.tmp = Path(tmp)
        mode = "wb" if encoding is None else "w"
        self.handle: IO[Any] = os.fdopen(fd, mode, **({} if encoding is None else {"encoding": encoding, "newline": ""}))

    def commit(self, path: Optional[Path] = None) -> Path:
        final = Path(path) if path is not None else self.path
        try:
            self.handle.flush()
            os.fsync(self.handle.fileno())
            self.handle.close()
            os.replace(self.tmp, final)
        except BaseException:
            self.abort()
            raise
        return final

    def abort(self) -> None:
        if not self.handle.closed:
            self.handle.close()
        try:
            self.tmp.unlink()
        except FileNotFoundError:
            pass

    def __enter__(self) -> "AtomicFile":
        return self

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        if exc_type is None:
            self.commit()
        else:
            self.abort()


def atomic_write_text(path: Path, text: str) -> None:
    """Replace ``path`` with ``text`` in one step (see the module docstring)."""
    with AtomicFile(path) as out:
        out.handle.write(text)


def atomic_write_json(path: Path, payload: Any) -> None:
    """Replace a small metadata file (info.json...) whole, never half-written."""
    atomic_write_text(path, json.dumps(payload, indent=2, sort_keys=True, default=str))
