"""Errors raised by graph_points.

Both derive from ValueError so callers that only care about "bad input" can
catch one thing; the CLI maps them to distinct exit codes.
"""
from __future__ import annotations

import difflib
import heapq
from typing import Iterable, Sequence


class GraphLoadError(ValueError):
    """A graph file or directory is missing, unreadable or not what was expected.

    The message always names the path and says what was expected, because the
    user usually just passed the wrong file (a checkpoint, an events file...).
    """


class TracePointsError(ValueError):
    """A user-given point (fp/bp/train op) cannot be used.

    Raised instead of warning and carrying on: upstream silently produces a
    trace with no FP/BP when a name is wrong, and the user only notices after a
    whole profiling run. ``suggestions`` holds the closest op names.
    """

    def __init__(self, message: str, suggestions: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.suggestions: tuple[str, ...] = tuple(suggestions)


def closest_names(name: str, candidates: Iterable[str], n: int = 5) -> list[str]:
    """The ``n`` op names most similar to ``name`` (difflib ratio), best first.

    Always returns ``n`` names when the graph has that many (no cutoff): a
    user with a typo wants something to copy. On big graphs the exact
    ``ratio()`` is computed only for the few hundred names with the best
    ``quick_ratio()`` upper bound, so the error path stays fast.
    """
    pool = list(dict.fromkeys(candidates))
    if len(pool) > 2000:
        matcher = difflib.SequenceMatcher()
        matcher.set_seq2(name)
        scored = []
        for candidate in pool:
            matcher.set_seq1(candidate)
            scored.append((matcher.quick_ratio(), candidate))
        pool = [c for _, c in heapq.nlargest(300, scored)]
    return difflib.get_close_matches(name, pool, n=n, cutoff=0.0)


def unknown_op_error(kind: str, name: str, candidates: Iterable[str]) -> TracePointsError:
    """The error for a user-given op name that the graph does not contain."""
    suggestions = closest_names(name, candidates)
    listed = ", ".join(repr(s) for s in suggestions) if suggestions else "(graph has no ops)"
    return TracePointsError(
        f"{kind} {name!r} is not an op in this graph; the closest op names are: {listed}",
        suggestions,
    )
