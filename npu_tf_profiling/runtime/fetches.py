"""What a `Session.run` fetches: a cacheable key of its shape, its leaves, and their op names.

The session profiler decides once per fetch shape whether a run is an iteration;
these helpers read the shapes users pass (tensors, ops, names, nested lists,
tuples and dicts, MonitoredSession's dict keyed by hook objects).
"""
from __future__ import annotations

from typing import Any, Hashable

import tensorflow as tf

_CONTAINERS = (list, tuple, dict)


def fetch_key(fetches: Any) -> Hashable:
    """A hashable key for the shape of `fetches` (tensors and ops are hashable by identity).

    A lone tensor or op, the common case, is its own key: nothing is built per run.
    """
    if type(fetches) not in _CONTAINERS and not isinstance(fetches, _CONTAINERS):
        return fetches  # an unhashable one makes the cache lookup raise TypeError: decided every time
    if isinstance(fetches, dict):
        return (dict, tuple((k, fetch_key(v)) for k, v in fetches.items()))
    return (type(fetches), tuple(fetch_key(f) for f in fetches))


def fetch_leaves(fetches: Any) -> list[Any]:
    """The leaves of a fetch structure, in any order.

    Not `tf.nest.flatten`: it sorts dict keys, and MonitoredSession fetches a dict
    keyed by hook objects, which do not sort.
    """
    leaves: list[Any] = []
    stack = [fetches]
    while stack:
        item = stack.pop()
        if isinstance(item, (list, tuple)):
            stack.extend(item)
        elif isinstance(item, dict):
            stack.extend(item.values())
        elif item is not None:
            leaves.append(item)
    return leaves


def op_name(graph: tf.Graph, element: Any) -> str | None:
    if isinstance(element, str):
        try:
            element = graph.as_graph_element(element, allow_tensor=True, allow_operation=True)
        except (KeyError, ValueError, TypeError):
            return None
    if isinstance(element, tf.Operation):
        return element.name
    op = getattr(element, "op", None)
    return op.name if isinstance(op, tf.Operation) else None
