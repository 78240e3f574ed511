"""Reading the small JSON metadata files (info.json, graph_ops_<model>.json).

Metadata files are helpers for the reports, never preconditions: a damaged one
must not stop a report built from intact raw records, so a reader gets None and
a warning that names the file and what is done without it.
"""
from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

from npu_tf_profiling.raw_format.errors import RawDataWarning


def read_json_object(path: Path, without_it: str) -> dict[str, Any] | None:
    """A JSON object file, or None (with a warning naming the file and `without_it`) if absent or bad.

    Metadata files are helpers for the reports, never preconditions: a damaged one
    must not stop a report built from intact raw records.
    """
    if not path.is_file():
        warnings.warn(f"{path}: missing; {without_it}", RawDataWarning, stacklevel=3)
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        warnings.warn(f"{path}: unreadable ({exc}); {without_it}", RawDataWarning, stacklevel=3)
        return None
    if not isinstance(data, dict):
        warnings.warn(f"{path}: not a JSON object; {without_it}", RawDataWarning, stacklevel=3)
        return None
    return data
