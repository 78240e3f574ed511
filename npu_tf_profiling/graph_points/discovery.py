"""Discovery: the rules of docs/trace_points.md, applied in order to one graph.

Each rule group is a module returning a frozen result with its reasons:
``updates`` (gradient ops, optimizer updates), ``iteration_end`` (the train
op, the global step), ``regions`` (loss, forward and backward regions),
``data_inputs``, ``fp``, ``collectives`` (all-reduce groups), ``bp`` and
``user_points``. This module only feeds each result to the rules after it,
and turns the results into a TracePoints whose reasons follow the same order.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from npu_tf_profiling.graph_points import optypes
from npu_tf_profiling.graph_points.bp import BackwardEnd, find_bp
from npu_tf_profiling.graph_points.collectives import Collectives, find_collectives
from npu_tf_profiling.graph_points.data_inputs import find_data_inputs
from npu_tf_profiling.graph_points.fp import ForwardStart, find_fp
from npu_tf_profiling.graph_points.index import GraphIndex, ids_in, paused_gc
from npu_tf_profiling.graph_points.iteration_end import find_global_step, find_iteration_end
from npu_tf_profiling.graph_points.loading import LoadedGraph, load_graph
from npu_tf_profiling.graph_points.points import TracePoints
from npu_tf_profiling.graph_points.regions import find_regions
from npu_tf_profiling.graph_points.updates import find_updates
from npu_tf_profiling.graph_points.user_points import resolve_user_point


@dataclass(frozen=True)
class Candidates:
    """Alternatives for the user: forward compute ops from the start of the
    forward pass, backward ones from the end of the backward pass (latest first)."""

    forward: tuple[str, ...]
    backward: tuple[str, ...]


class Discovery:
    """The analysis of one graph. Building it does all the automatic work;
    ``points()`` applies user-given names on top, ``candidates()`` lists
    alternatives. Use ``analyse()`` or ``find_trace_points()``."""

    def __init__(self, loaded: LoadedGraph, *, train_op: str | None = None, index: GraphIndex | None = None) -> None:
        with paused_gc():
            self.loaded = loaded
            self.index = idx = index if index is not None else GraphIndex(loaded.graph_def)
            self.is_compute = optypes.compute_flags(idx.types)
            self.updates = find_updates(idx, loaded.graph_def)
            self.iteration_end = find_iteration_end(idx, loaded, self.updates, train_op)
            self.regions = find_regions(idx, self.updates, self.iteration_end)
            self.global_step = find_global_step(idx, loaded)
            self.data_inputs = find_data_inputs(idx, self.regions, in_function=bool(loaded.runs))
            # Without a training step there is nothing to trace: fp, bp and the groups stay empty.
            self.fp = ForwardStart()
            self.collectives = Collectives()
            self.bp = BackwardEnd()
            if self.regions.is_training:
                self.fp = find_fp(idx, self.data_inputs, self.regions.forward, self.is_compute)
                self.collectives = find_collectives(idx, self.iteration_end.in_step, self.regions.backward,
                                                    self.is_compute)
                self.bp = find_bp(idx, self.updates, self.regions, self.collectives, self.is_compute)

    @property
    def is_training(self) -> bool:
        return self.regions.is_training

    def points(self, fp_point: str = "", bp_point: str = "") -> TracePoints:
        """TracePoints with user names (exact op names) taking precedence."""
        names = self.index.names
        step = self.iteration_end
        reasons = [step.reason, self.regions.reason, self.data_inputs.reason]
        fp_id = self._chosen("fp_point", fp_point, self.fp.op, self.fp.reason, reasons)
        bp_id = self._chosen("bp_point", bp_point, self.bp.op, self.bp.reason, reasons)
        reasons.extend(self.collectives.reasons)
        reasons.append(self.global_step.reason)
        reasons.extend(_index_notes(self.index))
        reasons.extend(step.notes)
        reasons.extend(self.regions.notes)
        return TracePoints(
            fp=names[fp_id] if fp_id is not None else None,
            bp=names[bp_id] if bp_id is not None else None,
            bp_inputs=tuple(self.index.tensor_name(op, port) for op, port in self.bp.inputs),
            get_next=tuple(names[i] for i in self.data_inputs.ops),
            all_reduce=tuple(tuple(names[i] for i in group) for group in self.collectives.groups),
            iteration_end=names[step.op] if step.op is not None else None,
            global_step=names[self.global_step.op] if self.global_step.op is not None else None,
            is_training=self.is_training,
            reasons=tuple(r for r in reasons if r),
            iteration_end_also=tuple(names[i] for i in step.also),
        )

    def _chosen(self, kind: str, user_name: str, auto_id: int | None, auto_reason: str,
                reasons: list[str]) -> int | None:
        """The user's op for `kind` (fp_point/bp_point) when given, else the automatic one; adds the reasons."""
        if not user_name:
            reasons.append(auto_reason)
            return auto_id
        point = resolve_user_point(self.index, kind, user_name, self.iteration_end, self.regions)
        reasons.extend(point.reasons)
        return point.op

    def candidates(self, top: int) -> Candidates:
        """The first ``top`` forward and last ``top`` backward candidates."""
        idx = self.index
        names, pos = idx.names, idx.topo_pos
        forward = list(self.fp.reach[:top])
        if len(forward) < top:
            chosen = set(forward)
            more = [i for i in idx.sort_topo(ids_in(self.regions.forward)) if self.is_compute[i] and i not in chosen]
            forward.extend(more[: top - len(forward)])
        backward = list(self.bp.ranked[:top])
        if len(backward) < top:
            chosen = set(backward)
            rest = [i for i in ids_in(self.regions.backward) if self.is_compute[i] and i not in chosen]
            rest.sort(key=lambda i: -pos[i])
            backward.extend(rest[: top - len(backward)])
        return Candidates(tuple(names[i] for i in forward), tuple(names[i] for i in backward[:top]))


def _index_notes(index: GraphIndex) -> list[str]:
    """Warnings for a graph TensorFlow could not run: inputs naming missing ops, cycles outside while loops."""
    notes = []
    missing = index.missing_inputs
    if missing:
        shown = ", ".join(repr(m) for m in missing[:3])
        notes.append(f"warning: {len(missing)} op input(s) name ops missing from the graph "
                     f"(e.g. {shown}); the file may be truncated or hand-edited")
    cycles = index.cycle_breaks
    if cycles:
        shown = ", ".join(repr(index.names[i]) for i in cycles[:3])
        notes.append(f"warning: the graph has {len(cycles)} cycle(s) that no while loop (NextIteration) makes, through {shown}: "
                     "TensorFlow cannot run such a graph, and the order of the ops on a cycle (and so these points) is a guess")
    return notes


def analyse(graph: Any, *, train_op: str | None = None) -> Discovery:
    """Load ``graph`` (tf.Graph, GraphDef, MetaGraphDef or path) and analyse it."""
    return Discovery(load_graph(graph), train_op=train_op)


def find_trace_points(graph: Any, fp_point: str = "", bp_point: str = "", *,
                      train_op: str | None = None) -> TracePoints:
    """The step-trace points of ``graph``, found by the rules of docs/trace_points.md.

    ``fp_point``/``bp_point``: exact op names that override discovery (empty:
    automatic). ``train_op``: the op the training loop runs (auto-detected when
    None). Raises GraphLoadError for unreadable input and TracePointsError for
    a user-given name that is not in the graph.
    """
    return analyse(graph, train_op=train_op).points(fp_point, bp_point)
