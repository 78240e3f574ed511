"""The ops this package adds to a user's graph, and a GraphDef without them.

The runtime's probes (the stamps and the ring table they are written to)
live in the graph from the first profiled step on, so every graph saved after
profiling (an Estimator's checkpoint ``.meta``, ``tf.io.write_graph`` after
training, a ``tf.Graph`` analysed again) carries them. They are sinks that wait
on the train op, so left in they would win "which op ends the iteration", and
their control edges into model ops would change the walks. Discovery must see
the user's model only, so every graph is cleaned when it is loaded.

A scope name is made unique by TensorFlow (``npu_tf_profiling_probes_1`` when
probes are built twice) and may sit under a user's name scope, so any path
component of that form marks an op as ours.
"""
from __future__ import annotations

import re
from typing import Any

from npu_tf_profiling.raw_format import layout

PROBE_SCOPE = layout.PROBE_SCOPE
_OWN_COMPONENT = re.compile(r"(?:^|/)" + re.escape(PROBE_SCOPE) + r"(?:_\d+)?/")


def is_own_op(name: str) -> bool:
    """Whether the op (or tensor, or ``^control`` input) ``name`` was added by this package."""
    return PROBE_SCOPE in name and _OWN_COMPONENT.search(name.lstrip("^")) is not None


def without_own_ops(graph_def: Any) -> Any:
    """``graph_def`` without this package's ops and without the edges to them.

    Returns the same object when it holds none of them (the common case costs
    one pass over the names), otherwise a new GraphDef: the caller's is never
    modified.
    """
    nodes = graph_def.node
    if not any(is_own_op(name) for name in [node.name for node in nodes]):
        return graph_def
    cleaned = type(graph_def)()
    for field, value in graph_def.ListFields():  # versions, library, debug_info: as they are
        if field.name == "node":
            continue
        if field.message_type is not None:
            getattr(cleaned, field.name).CopyFrom(value)
        else:
            setattr(cleaned, field.name, value)
    for node in nodes:
        if is_own_op(node.name):
            continue
        kept = cleaned.node.add()
        kept.CopyFrom(node)
        if any(is_own_op(text) for text in node.input):
            kept.ClearField("input")
            kept.input.extend(text for text in node.input if not is_own_op(text))
    return cleaned
