"""Suggested unified diffs for the simplest knobs: an argument added to a call, a call appended to a chain.

Only a diff, never applied: the user reads it and decides. It is made only when
the recorded file is readable here and each call is found on its recorded line
with its parentheses balanced; otherwise there is no diff (the finding still
names the line). Several edits of one file make one diff (a map made parallel
and a prefetch added at the pipeline's end).
"""
from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Optional


@dataclass(frozen=True)
class Edit:
    """On `line`, the first `call(...)`: with `argument=value` when `argument` is set, else followed by `appended`."""

    line: int
    call: str
    argument: Optional[str] = None
    value: str = ""
    appended: str = ""


def _line_offset(text: str, line: int) -> Optional[int]:
    lines = text.splitlines(keepends=True)
    if not 1 <= line <= len(lines):
        return None
    return sum(len(s) for s in lines[: line - 1])


def _call_span(text: str, start: int, name: str) -> Optional[tuple[int, int]]:
    """(offset of '(', offset of its matching ')') of the first `name(` call on the line starting at `start`."""
    end_of_line = text.find("\n", start)
    match = re.compile(rf"\b{re.escape(name)}\s*\(").search(text, start, end_of_line if end_of_line >= 0 else len(text))
    if match is None:
        return None
    depth = 0
    for i in range(match.end() - 1, len(text)):
        depth += {"(": 1, ")": -1}.get(text[i], 0)
        if depth == 0:
            return match.end() - 1, i
    return None


def _apply(text: str, edit: Edit) -> Optional[str]:
    start = _line_offset(text, edit.line)
    span = None if start is None else _call_span(text, start, edit.call)
    if span is None:
        return None
    open_at, close_at = span
    if edit.argument is None:
        return text[: close_at + 1] + edit.appended + text[close_at + 1:]
    inside = text[open_at + 1: close_at]
    present = re.compile(rf"\b{re.escape(edit.argument)}\s*=\s*[^,()]+")
    if present.search(inside):
        inside = present.sub(f"{edit.argument}={edit.value}", inside, count=1)
    else:
        inside = f"{inside.rstrip()}, {edit.argument}={edit.value}" if inside.strip() else f"{edit.argument}={edit.value}"
    return text[: open_at + 1] + inside + text[close_at:]


def suggested_diff(file: str, edits: list[Edit]) -> Optional[str]:
    """One unified diff of `file` with every edit made (later lines first, so earlier offsets hold); None if any fails."""
    try:
        old = Path(file).read_text()
    except (OSError, UnicodeDecodeError):
        return None
    new: Optional[str] = old
    for edit in sorted(edits, key=lambda e: -e.line):
        new = _apply(new, edit) if new is not None else None
    if new is None or new == old:
        return None
    return "".join(difflib.unified_diff(old.splitlines(keepends=True), new.splitlines(keepends=True),
                                        fromfile=file, tofile=f"{file} (suggested)", n=1))
