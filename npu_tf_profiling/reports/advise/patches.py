"""Suggested unified diffs for the simplest knobs: an argument added to a call, a call appended to a chain.

Only a diff, never applied: the user reads it and decides. It is made only when
the recorded file is readable here and the call is found on the recorded line
with its parentheses balanced; otherwise there is no diff (the finding still
names the line).
"""
from __future__ import annotations

import difflib
import re
from pathlib import Path
from typing import Optional


def _read(file: str) -> Optional[str]:
    try:
        return Path(file).read_text()
    except (OSError, UnicodeDecodeError):
        return None


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


def _diff(file: str, old: str, new: str) -> Optional[str]:
    if old == new:
        return None
    return "".join(difflib.unified_diff(old.splitlines(keepends=True), new.splitlines(keepends=True),
                                        fromfile=file, tofile=f"{file} (suggested)", n=1))


def with_argument(file: str, line: int, call: str, argument: str, value: str) -> Optional[str]:
    """`call(...)` on `line` with `argument=value` (replacing the argument's value when present)."""
    text = _read(file)
    start = None if text is None else _line_offset(text, line)
    span = None if start is None else _call_span(text, start, call)
    if span is None:
        return None
    open_at, close_at = span
    inside = text[open_at + 1: close_at]
    present = re.compile(rf"\b{re.escape(argument)}\s*=\s*[^,()]+")
    if present.search(inside):
        inside = present.sub(f"{argument}={value}", inside, count=1)
    else:
        inside = f"{inside.rstrip()}, {argument}={value}" if inside.strip() else f"{argument}={value}"
    return _diff(file, text, text[: open_at + 1] + inside + text[close_at:])


def with_call_after(file: str, line: int, call: str, appended: str) -> Optional[str]:
    """`call(...)` on `line` followed by `appended` (e.g. ".prefetch(tf.data.AUTOTUNE)")."""
    text = _read(file)
    start = None if text is None else _line_offset(text, line)
    span = None if start is None else _call_span(text, start, call)
    if span is None:
        return None
    close_at = span[1]
    return _diff(file, text, text[: close_at + 1] + appended + text[close_at + 1:])
