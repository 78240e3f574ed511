"""Reading an append-only JSON-lines raw file: the one loop its readers share.

The runtime appends these files in whole batches (``append_writer``), so a kill
mid-write can leave a torn last line, and a file from another version can hold
lines a reader does not know: each is skipped and counted, never fatal, and the
readers say how many (``skipped``) rather than guess.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def json_objects(path: Path) -> tuple[list[dict[str, Any]], int]:
    """The JSON objects of `path`, in file order (none when it does not exist), and how many lines were not one."""
    if not path.is_file():
        return [], 0
    objects: list[dict[str, Any]] = []
    skipped = 0
    for line in path.read_bytes().splitlines():
        try:
            value = json.loads(line)
        except ValueError:
            value = None
        if isinstance(value, dict):
            objects.append(value)
        else:
            skipped += 1
    return objects, skipped
