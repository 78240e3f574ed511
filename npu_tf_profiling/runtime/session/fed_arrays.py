"""Whether a feed_dict script feeds the same values every iteration (no input pipeline at all).

Without GetNext timing, the summary can only bound input from above by the host's time
between iterations: a feed_dict script may be making its batch there (``next_batch``).
ModelZoo's GCN is not: it feeds the whole graph's arrays, the same objects, every
step, so its host time is its evaluation runs and their set-up, never input. This
watches an iteration's feeds for its first OBSERVED iterations: the same objects every
time (``is``, holding the previous iteration's values so that a freed batch's address
cannot come back as a "same" new one) means nothing is read between iterations.
"""
from __future__ import annotations

from typing import Any, Mapping, Optional

OBSERVED = 5
FEEDS_KEY = "feeds"  # info.json, models[id]: {"values": n, "same_each_iteration": bool, "iterations_seen": k}


_SCALARS = (bool, int, float, complex, str, bytes)


def _same(a: Any, b: Any) -> bool:
    """The same object; or equal scalars, or tuples/lists of same items (GCN feeds ``features[1].shape``,
    a new tuple of the same ints every step, and a sparse tensor as a (coords, values, shape) tuple)."""
    if a is b:
        return True
    if isinstance(a, _SCALARS):
        return type(a) is type(b) and a == b
    if isinstance(a, (tuple, list)) and type(a) is type(b) and len(a) == len(b):
        return all(_same(x, y) for x, y in zip(a, b))
    return False


class FeedWatch:
    def __init__(self) -> None:
        self._previous: Optional[dict[Any, Any]] = None
        self._seen = 0
        self._same = True

    def observe(self, feed_dict: Mapping[Any, Any]) -> Optional[dict[str, Any]]:
        """Note one iteration's feeds; the finding once OBSERVED iterations were seen, else None."""
        current = dict(feed_dict)
        if self._previous is not None:
            self._same = self._same and current.keys() == self._previous.keys() and all(
                _same(current[key], self._previous[key]) for key in current)
        self._previous = current
        self._seen += 1
        if self._seen < OBSERVED:
            return None
        self._previous = None  # hold nothing once decided
        return {"values": len(current), "same_each_iteration": self._same, "iterations_seen": self._seen}
