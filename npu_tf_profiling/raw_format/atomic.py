"""All-or-nothing file writes: the one implementation every writer uses.

Reports and metadata are rewritten while other processes may read them, and the
writer may be killed at any moment. So a file is written under a temporary name
in its own folder, flushed, then moved into place with ``os.replace``: a
reader sees the old file or the new one, never half of one, and a failed write
leaves no temporary file behind.

Only the run's own metadata (``atomic_write_json``: info.json and the files
the runtime writes beside the raw data) is also fsync'ed before the move, so
that it survives a machine crash with the raw data it describes. Reports are
not: `report` remakes them from the raw files, and an fsync cost about 2.7 ms a
file on the 2-core VM's virtual disk (benchmarks/history/2026-12-07-layouts-text.md),
some 20 s over the 7,000 files `cluster --layouts` writes for 1,024 ranks (the
msprof databases are written with ``synchronous=OFF`` for the same reason). Names are taken and
replaced through ``own_files``: a planted link at the final name is refused,
never replaced, and the file gets the umask's mode like every other.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import IO, Any, Optional

from npu_tf_profiling.raw_format import own_files


class AtomicFile:
    """A file written under a temporary name; ``commit`` moves it into place, ``abort`` removes it.

    ``commit`` may name a different final path, for writers that only know the
    name once the content is complete (a timeline split into parts).
    """

    def __init__(self, path: Path, *, encoding: Optional[str] = "utf-8", durable: bool = False) -> None:
        self.path = Path(path)
        self.durable = durable
        own_files.make_dir(self.path.parent)
        fd, self.tmp = own_files.create_temp(self.path.parent, prefix=f".{self.path.name}.")
        mode = "wb" if encoding is None else "w"
        self.handle: IO[Any] = os.fdopen(fd, mode, **({} if encoding is None else {"encoding": encoding, "newline": ""}))

    def commit(self, path: Optional[Path] = None) -> Path:
        final = Path(path) if path is not None else self.path
        try:
            self.handle.flush()
            if self.durable:
                os.fsync(self.handle.fileno())
            self.handle.close()
            own_files.replace(self.tmp, final)
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


def atomic_write_text(path: Path, text: str, *, durable: bool = False) -> None:
    """Replace ``path`` with ``text`` in one step (see the module docstring)."""
    with AtomicFile(path, durable=durable) as out:
        out.handle.write(text)


def atomic_write_json(path: Path, payload: Any) -> None:
    """Replace a small metadata file of the run (info.json...) whole, never half-written, and durable."""
    atomic_write_text(path, json.dumps(payload, indent=2, sort_keys=True, default=str), durable=True)
