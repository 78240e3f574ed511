"""The PROF folder's name, ``PROF_<pid>_<YYYYmmddHHMMSS>_<id>``: built and parsed here only.

The runtime names one folder per process and output; the reports take the
``<YYYYmmddHHMMSS>`` of every report file name from it (so rebuilding a report
overwrites it), and the synthetic data of tests and benchmarks names its folders
the same way. One owner keeps the writer and the readers of the name in step.
"""
from __future__ import annotations

import re
import secrets
import string
import time
from dataclasses import dataclass
from pathlib import Path

from npu_tf_profiling.raw_format.layout import PROF_DIR_PREFIX

STAMP_FORMAT = "%Y%m%d%H%M%S"
_ID_ALPHABET = string.ascii_uppercase + string.digits
_ID_LENGTH = 8
# The id is free text to a reader (renamed copies, older versions): only pid and stamp are parsed.
_PATTERN = re.compile(r"^" + re.escape(PROF_DIR_PREFIX) + r"(\d+)_(\d{14})_(.*)$")


@dataclass(frozen=True)
class ProfName:
    """A PROF folder's name: the recording process, its local start time (``STAMP_FORMAT``), a random id
    that keeps two folders of one second apart."""

    pid: int
    stamp: str
    id: str

    @classmethod
    def new(cls, pid: int, now: float) -> "ProfName":
        """A fresh name for a folder started at `now` (epoch seconds) by process `pid`."""
        random_id = "".join(secrets.choice(_ID_ALPHABET) for _ in range(_ID_LENGTH))
        return cls(pid, time.strftime(STAMP_FORMAT, time.localtime(now)), random_id)

    @classmethod
    def parse(cls, name: str) -> "ProfName | None":
        """The name's parts, or None when `name` is not ``PROF_<pid>_<14 digits>_<id>`` (a renamed copy)."""
        match = _PATTERN.match(name)
        return cls(int(match.group(1)), match.group(2), match.group(3)) if match else None

    @classmethod
    def of(cls, prof_dir: Path | str) -> "ProfName | None":
        """The name of folder `prof_dir`, parsed (None when it is not one)."""
        return cls.parse(Path(prof_dir).name)

    def __str__(self) -> str:
        return f"{PROF_DIR_PREFIX}{self.pid}_{self.stamp}_{self.id}"
