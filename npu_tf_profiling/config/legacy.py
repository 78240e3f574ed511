"""Legacy spellings of profiling options found in real published Ascend scripts.

Each is accepted, normalised to the modern form, and produces one note naming
the modern spelling. Keeping them here keeps `options.py` about the real model.
"""
from __future__ import annotations

import re
from typing import Any

from npu_tf_profiling.config.errors import ProfilingOptionsError
from npu_tf_profiling.config.option_specs import LEGACY_KEYS, SPEC_BY_KEY

# A colon list of switch names: `PROFILING_OPTIONS=task_trace:training_trace`.
_COLON_LIST = re.compile(r"^\s*[A-Za-z_]+(\s*:\s*[A-Za-z_]+)*\s*$")
# A shell line continuation kept literally inside single quotes: `...,\<newline>   "key"...`.
_LINE_CONTINUATION = re.compile(r"\\\r?\n")


def colon_list_to_dict(text: str) -> tuple[dict[str, str], str] | None:
    """`task_trace:training_trace` -> {"task_trace": "on", "training_trace": "on"}, with a note.

    Only recognised when every item is a known on/off switch, so a mistyped
    JSON text is still reported as bad JSON rather than reinterpreted.
    """
    if not _COLON_LIST.match(text):
        return None
    names = [name.strip() for name in text.split(":")]
    if not all(name in SPEC_BY_KEY or name == "task_time" for name in names):
        return None
    modern = "{" + ",".join(f'"{name}":"on"' for name in names) + "}"
    note = f"profiling options in the legacy colon form {text.strip()!r} are deprecated; write JSON: {modern}"
    return {name: "on" for name in names}, note


def strip_line_continuations(text: str) -> tuple[str, str | None]:
    """Remove shell `\\<newline>` continuations that single quotes kept in the JSON text."""
    cleaned, count = _LINE_CONTINUATION.subn(" ", text)
    if not count:
        return text, None
    return cleaned, "profiling options contain shell line continuations ('\\' at line end); write the JSON on one line"


def rename_legacy_keys(options: dict[str, Any], origin: str) -> tuple[dict[str, Any], list[str]]:
    """Old key names -> modern ones. Both spellings at once is ambiguous: an error naming both."""
    renamed: dict[str, Any] = {}
    notes: list[str] = []
    for key, value in options.items():
        modern = LEGACY_KEYS.get(key)
        if modern is None:
            continue
        if modern in options:
            raise ProfilingOptionsError(
                f"{origin}: option '{modern}' is given twice, as '{key}' (its deprecated spelling) and as '{modern}'; keep '{modern}'"
            )
        notes.append(f"profiling option '{key}' is deprecated; use '{modern}'")
    for key, value in options.items():
        renamed[LEGACY_KEYS.get(key, key)] = value
    return renamed, notes
