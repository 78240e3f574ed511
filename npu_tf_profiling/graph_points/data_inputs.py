"""Data inputs, the ``get_next`` ops (rule 5 of docs/trace_points.md).

Iterator and queue reads are what hand a batch to the step. Placeholders are
considered only when no such read feeds the loss (a feed_dict pipeline), and
then only those that can carry a batch: scalars and bools are settings
(learning rate, keep_prob, is_training), not data.
"""
from __future__ import annotations

from dataclasses import dataclass

from npu_tf_profiling.graph_points import optypes
from npu_tf_profiling.graph_points.index import GraphIndex
from npu_tf_profiling.graph_points.regions import Regions

_DT_BOOL, _DT_RESOURCE, _DT_VARIANT = 10, 20, 21  # tensorflow DataType enum values


@dataclass(frozen=True)
class DataInputs:
    """ops: the data inputs, topological order (for an inference graph: the
    ones with consumers, for information). skipped: candidates of the same
    kind left out because they do not feed the step."""

    ops: tuple[int, ...]
    skipped: tuple[int, ...]
    reason: str


def find_data_inputs(index: GraphIndex, regions: Regions, in_function: bool = False) -> DataInputs:
    """Rule 5: in the forward region of a training graph, else anywhere they feed something.

    ``in_function``: the graph is a `tf.function`'s, whose Placeholders are its arguments (a batch read
    before the call) and its captures (variables' and iterators' handles), never a feed_dict."""
    types, names = index.types, index.names
    training = regions.is_training
    iterators = [i for i, t in enumerate(types) if t in optypes.ITERATOR_INPUT_TYPES]
    region = regions.forward if training else _feeding_anything(index, iterators)
    chosen = [i for i in iterators if region[i]]
    kind = "iterator/queue data input"
    candidates = iterators
    not_batches: list[int] = []
    if not chosen:
        placeholders = [i for i, t in enumerate(types) if t in optypes.PLACEHOLDER_TYPES]
        candidates = placeholders
        feeding = [i for i in placeholders if (region[i] if training else index.data_out[i])]
        chosen = [i for i in feeding if _placeholder_is_batch(index, i)]
        batches = set(chosen)
        # Handles (a variable's, an iterator's) are not settings either; they are not worth listing.
        not_batches = [i for i in feeding if i not in batches and not _placeholder_is_handle(index, i)]
        kind = "function argument" if in_function else "feed_dict Placeholder"
    chosen = index.sort_topo(chosen)
    listed = set(chosen) | set(not_batches)
    skipped = tuple(i for i in candidates if i not in listed and not (in_function and _placeholder_is_handle(index, i)))
    if not chosen:
        return DataInputs((), skipped, (
            "get_next = none: no iterator, queue or batch Placeholder feeds the loss (synthetic data?)"
            if training else "get_next = none: no data input op in the graph"
        ))
    where = "feeding the training step" if training else "in this graph"
    reason = f"get_next = {', '.join(names[i] for i in chosen)}: {kind}(s) {where}"

    def shown(ops: list[int] | tuple[int, ...]) -> str:
        return ", ".join(names[i] for i in ops[:4]) + (", ..." if len(ops) > 4 else "")

    if not_batches:
        what = "arguments" if in_function else "Placeholders"
        reason += f"; not listed because scalar or bool {what} are settings, not batches: {shown(not_batches)}"
    if skipped and training:
        reason += f"; not listed because they do not feed the loss of the training step: {shown(skipped)}"
    return DataInputs(tuple(chosen), skipped, reason)


def _feeding_anything(index: GraphIndex, iterators: list[int]) -> bytearray:
    """Without a training step: ops with inputs, plus iterators with consumers."""
    region = bytearray(len(index))
    for i in range(len(index)):
        if index.data_in[i]:
            region[i] = 1
    for i in iterators:
        if index.data_out[i]:
            region[i] = 1
    return region


def _placeholder_is_handle(index: GraphIndex, i: int) -> bool:
    attrs = index.node_def(i).attr
    return "dtype" in attrs and attrs["dtype"].type in (_DT_RESOURCE, _DT_VARIANT)


def _placeholder_is_batch(index: GraphIndex, i: int) -> bool:
    """A Placeholder that can carry a batch: not scalar, not bool/handle."""
    attrs = index.node_def(i).attr
    if "dtype" in attrs and attrs["dtype"].type in (_DT_BOOL, _DT_RESOURCE, _DT_VARIANT):
        return False
    if "shape" in attrs:
        shape = attrs["shape"].shape
        if not shape.unknown_rank and len(shape.dim) == 0:
            return False
    return True
