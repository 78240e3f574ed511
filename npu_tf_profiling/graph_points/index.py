"""GraphIndex: a GraphDef turned into integer adjacency lists, built once.

Why not walk the NodeDefs directly: every question discovery (and the runtime)
asks is "which ops are upstream/downstream of these", and on a 100k-op graph
that must take milliseconds. Protobuf field access costs about a microsecond,
so the index reads every NodeDef exactly once and answers everything else from
plain Python lists of ints and bytearray masks.

All walks are iterative (an explicit stack, no recursion limit) and mark ops as
they are first seen, so the cycles that ``tf.while_loop`` creates through
``NextIteration`` are harmless.
"""
from __future__ import annotations

import gc
import heapq
from contextlib import contextmanager
from typing import Any, Iterable, Iterator, Sequence

from npu_tf_profiling.graph_points.optypes import BACK_EDGE_TYPES, PREDICATE_INPUT

# One 0/1 byte per op. Walks build bytearrays; finished discovery results keep
# immutable bytes, so a mask handed around cannot be changed under its owner.
Mask = bytes | bytearray

@contextmanager
def paused_gc() -> Iterator[None]:
    """Pause the cyclic garbage collector for a bulk build.

    Indexing and discovery allocate a few hundred thousand small lists of
    ints; the collector would otherwise make dozens of full passes over them
    (half the time on a 100k-op graph) looking for cycles they cannot have.
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def split_input(text: str) -> tuple[str, int]:
    """``"^a"`` -> ("a", -1) (control); ``"a:2"`` -> ("a", 2); ``"a"`` -> ("a", 0)."""
    if text.startswith("^"):
        return text[1:], -1
    colon = text.rfind(":")
    if colon > 0 and text[colon + 1:].isdigit():
        return text[:colon], int(text[colon + 1:])
    return text, 0


def op_name_of(name: str) -> str:
    """The op name for an op or tensor name (``"a:0"``, ``"^a"`` -> ``"a"``)."""
    return split_input(name)[0]


class GraphIndex:
    """Adjacency of a GraphDef over data and control edges.

    Ops are numbered in GraphDef order; ``topo_pos`` gives each op's position
    in a deterministic topological order (GraphDef order when that is already
    topological, which it is for graphs built by the Python API, apart from
    the NextIteration back edges).
    """

    __slots__ = (
        "graph_def", "names", "types", "_ids",
        "data_in", "data_port", "ctrl_in", "data_out", "ctrl_out",
        "missing_inputs", "_topo_pos", "_cycle_breaks",
    )

    def __init__(self, graph_def: Any) -> None:
        with paused_gc():
            self._build(graph_def)

    def _build(self, graph_def: Any) -> None:
        nodes = graph_def.node
        self.graph_def = graph_def
        self.names: list[str] = [node.name for node in nodes]
        self.types: list[str] = [node.op for node in nodes]
        ids = {name: i for i, name in enumerate(self.names)}
        self._ids = ids
        count = len(self.names)
        # Lists are allocated only where there is something to hold; the many
        # ops without inputs, consumers or control edges share one empty
        # tuple, and all-zero port lists share one tuple per length.
        empty: tuple[int, ...] = ()
        data_in: list[Sequence[int]] = [empty] * count
        data_port: list[Sequence[int]] = [empty] * count
        ctrl_in: list[Sequence[int]] = [empty] * count
        data_out: list[Sequence[int]] = [empty] * count
        ctrl_out: list[Sequence[int]] = [empty] * count
        zeros: dict[int, tuple[int, ...]] = {}
        missing: list[str] = []
        get = ids.get
        for i, inputs in enumerate([node.input for node in nodes]):
            if not inputs:
                continue
            d_in: list[int] = []
            d_port: list[int] | None = None
            for text in inputs:
                src = get(text)
                if src is not None:  # the common case: "name", output 0
                    d_in.append(src)
                    if d_port is not None:
                        d_port.append(0)
                    out = data_out[src]
                    if out:
                        out.append(i)  # type: ignore[union-attr]
                    else:
                        data_out[src] = [i]
                    continue
                name, port = split_input(text)
                src = get(name)
                if src is None:
                    missing.append(name)
                elif port < 0:
                    if ctrl_in[i]:
                        ctrl_in[i].append(src)  # type: ignore[union-attr]
                    else:
                        ctrl_in[i] = [src]
                    if ctrl_out[src]:
                        ctrl_out[src].append(i)  # type: ignore[union-attr]
                    else:
                        ctrl_out[src] = [i]
                else:
                    if d_port is None:
                        d_port = [0] * len(d_in)
                    d_in.append(src)
                    d_port.append(port)
                    out = data_out[src]
                    if out:
                        out.append(i)  # type: ignore[union-attr]
                    else:
                        data_out[src] = [i]
            if d_in:
                data_in[i] = d_in
                if d_port is None:
                    d_port_shared = zeros.get(len(d_in))
                    if d_port_shared is None:
                        d_port_shared = zeros[len(d_in)] = (0,) * len(d_in)
                    data_port[i] = d_port_shared
                else:
                    data_port[i] = d_port
        self.data_in = data_in
        self.data_port = data_port
        self.ctrl_in = ctrl_in
        self.data_out = data_out
        self.ctrl_out = ctrl_out
        # Inputs naming ops absent from the graph: a hint of a truncated or
        # hand-edited file; discovery reports them, the walks ignore them.
        self.missing_inputs: tuple[str, ...] = tuple(dict.fromkeys(missing))
        self._topo_pos: list[int] | None = None
        # Ops where a cycle not made by a while loop (NextIteration) was broken: a graph TensorFlow cannot run.
        self._cycle_breaks: list[int] = []

    # ------------------------------------------------------------------ build
    @classmethod
    def from_graph(cls, graph: Any) -> "GraphIndex":
        """Index a ``tf.Graph``, a ``GraphDef`` or a ``MetaGraphDef``."""
        if hasattr(graph, "as_graph_def"):
            return cls(graph.as_graph_def())
        if hasattr(graph, "graph_def") and hasattr(graph, "collection_def"):
            return cls(graph.graph_def)
        if hasattr(graph, "node"):
            return cls(graph)
        raise TypeError(f"expected a tf.Graph, GraphDef or MetaGraphDef, got {type(graph).__name__}")

    # ------------------------------------------------------------ name lookups
    def __len__(self) -> int:
        return len(self.names)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and (name in self._ids or op_name_of(name) in self._ids)

    def __iter__(self) -> Iterator[str]:
        return iter(self.names)

    def id_of(self, name: str) -> int:
        """Op id for an op or tensor name; KeyError if absent."""
        found = self._ids.get(name)
        if found is None:
            found = self._ids.get(op_name_of(name))
            if found is None:
                raise KeyError(f"no op named {name!r} in the graph")
        return found

    def get_id(self, name: str) -> int | None:
        try:
            return self.id_of(name)
        except KeyError:
            return None

    def op_type(self, name: str) -> str:
        return self.types[self.id_of(name)]

    def node_def(self, name_or_id: str | int) -> Any:
        """The NodeDef (for attrs); ids and names both accepted."""
        i = name_or_id if isinstance(name_or_id, int) else self.id_of(name_or_id)
        return self.graph_def.node[i]

    def inputs(self, name: str) -> list[str]:
        """Data input tensor names of an op, in input order."""
        i = self.id_of(name)
        return [self.tensor_name(src, port) for src, port in zip(self.data_in[i], self.data_port[i])]

    def control_inputs(self, name: str) -> list[str]:
        return [self.names[src] for src in self.ctrl_in[self.id_of(name)]]

    def consumers(self, name: str) -> list[str]:
        """Ops that read any output of ``name`` (data edges), each once."""
        return [self.names[j] for j in dict.fromkeys(self.data_out[self.id_of(name)])]

    def tensor_name(self, op_id: int, port: int) -> str:
        return f"{self.names[op_id]}:{port}"

    # ----------------------------------------------------------------- walks
    def ancestors(self, op_names: Iterable[str]) -> set[str]:
        """The ops themselves plus everything they depend on, over data AND
        control edges. Accepts op or tensor names; KeyError for unknown ones."""
        mask = self.reach([self.id_of(n) for n in op_names], backward=True)
        return self.names_in(mask)

    def descendants(self, op_names: Iterable[str]) -> set[str]:
        """The ops themselves plus everything that depends on them (data and control)."""
        mask = self.reach([self.id_of(n) for n in op_names], backward=False)
        return self.names_in(mask)

    def names_in(self, mask: Mask) -> set[str]:
        names = self.names
        return {names[i] for i in ids_in(mask)}

    def reach(
        self,
        starts: Iterable[int],
        *,
        backward: bool,
        data_only: bool = False,
        within: Mask | None = None,
        values_only: bool = False,
    ) -> bytearray:
        """Mask of ops reachable from ``starts`` (included), walking inputs
        (``backward``) or consumers, optionally over data edges only and
        optionally never leaving the ops set in ``within``.

        ``values_only`` (implies data_only) also skips predicate edges: the
        condition input of Switch (v1 tf.cond) and of If/Case. A value that
        merely decides *whether* something runs does not flow into it: the
        is-finite check of loss scaling is not a gradient of the loss-scale
        update it guards.
        """
        if values_only:
            return self._reach_values(starts, backward, within)
        mark, stack = self._seeded(starts)
        first = self.data_in if backward else self.data_out
        second = None if data_only else (self.ctrl_in if backward else self.ctrl_out)
        pop = stack.pop
        push = stack.append
        while stack:
            i = pop()
            for j in first[i]:
                if not mark[j] and (within is None or within[j]):
                    mark[j] = 1
                    push(j)
            if second is not None:
                for j in second[i]:
                    if not mark[j] and (within is None or within[j]):
                        mark[j] = 1
                        push(j)
        return mark

    def _seeded(self, starts: Iterable[int]) -> tuple[bytearray, list[int]]:
        """A visit mask with `starts` marked, and the stack of those starts (each once)."""
        mark = bytearray(len(self.names))
        stack: list[int] = []
        for s in starts:
            if not mark[s]:
                mark[s] = 1
                stack.append(s)
        return mark, stack

    def _reach_values(self, starts: Iterable[int], backward: bool, within: Mask | None) -> bytearray:
        mark, stack = self._seeded(starts)
        types, data_in = self.types, self.data_in
        predicate_input = PREDICATE_INPUT
        adjacency = data_in if backward else self.data_out
        while stack:
            i = stack.pop()
            if backward:
                k = predicate_input.get(types[i])
                candidates = adjacency[i] if k is None else [j for n, j in enumerate(adjacency[i]) if n != k]
            else:
                candidates = adjacency[i]
            for j in candidates:
                if mark[j] or (within is not None and not within[j]):
                    continue
                if not backward:
                    k = predicate_input.get(types[j])
                    if k is not None and all(src != i for n, src in enumerate(data_in[j]) if n != k):
                        continue  # i only feeds j's predicate
                mark[j] = 1
                stack.append(j)
        return mark
    # ------------------------------------------------------------ ordering
    @property
    def topo_pos(self) -> list[int]:
        """Position of each op in a topological order that ignores the
        NextIteration back edges; any remaining cycle (malformed graph) is
        broken in GraphDef order. Min-id-first, so it is GraphDef order
        whenever GraphDef order is already topological."""
        if self._topo_pos is None:
            self._topo_pos = self._compute_topo_pos()
        return self._topo_pos

    @property
    def cycle_breaks(self) -> list[int]:
        """Ops of cycles that do not pass a NextIteration (a malformed graph), one per cycle broken."""
        _ = self.topo_pos
        return self._cycle_breaks

    def _compute_topo_pos(self) -> list[int]:
        types = self.types
        back = [t in BACK_EDGE_TYPES for t in types]
        count = len(types)
        data_in, ctrl_in = self.data_in, self.ctrl_in
        already_sorted = True
        for i in range(count):
            for j in data_in[i]:
                if j > i and not back[j]:
                    already_sorted = False
                    break
            if not already_sorted:
                break
            for j in ctrl_in[i]:
                if j > i and not back[j]:
                    already_sorted = False
                    break
            if not already_sorted:
                break
        if already_sorted:
            return list(range(count))
        indegree = [0] * count
        for i in range(count):
            indegree[i] = sum(1 for j in data_in[i] if not back[j]) + sum(1 for j in ctrl_in[i] if not back[j])
        heap = [i for i in range(count) if indegree[i] == 0]
        heapq.heapify(heap)
        pos = [-1] * count
        order = 0
        placed = 0
        while placed < count:
            if not heap:
                # A cycle not through NextIteration: release the lowest-id op left.
                stuck = next(i for i in range(count) if pos[i] < 0 and indegree[i] > 0)
                self._cycle_breaks.append(stuck)
                indegree[stuck] = 0
                heapq.heappush(heap, stuck)
            i = heapq.heappop(heap)
            if pos[i] >= 0:
                continue
            pos[i] = order
            order += 1
            placed += 1
            if back[i]:
                continue
            for j in self.data_out[i]:
                indegree[j] -= 1
                if indegree[j] == 0 and pos[j] < 0:
                    heapq.heappush(heap, j)
            for j in self.ctrl_out[i]:
                indegree[j] -= 1
                if indegree[j] == 0 and pos[j] < 0:
                    heapq.heappush(heap, j)
        return pos

    def depth(self) -> list[int]:
        """Longest data/control path from a source to each op (back edges
        ignored): 0 for Consts and variables, large for ops deep in the step.
        Unlike topological position it does not depend on creation order."""
        pos = self.topo_pos
        order = sorted(range(len(pos)), key=pos.__getitem__)
        types = self.types
        depth = [0] * len(pos)
        for i in order:
            best = -1
            for j in self.data_in[i]:
                if depth[j] > best and types[j] not in BACK_EDGE_TYPES:
                    best = depth[j]
            for j in self.ctrl_in[i]:
                if depth[j] > best and types[j] not in BACK_EDGE_TYPES:
                    best = depth[j]
            depth[i] = best + 1
        return depth

    def sort_topo(self, op_ids: Iterable[int]) -> list[int]:
        pos = self.topo_pos
        return sorted(op_ids, key=pos.__getitem__)


def ids_in(mask: Mask) -> list[int]:
    """Indices set in a mask; ``bytes.find`` keeps this fast on sparse masks."""
    out: list[int] = []
    find = mask.find
    i = find(1)
    while i >= 0:
        out.append(i)
        i = find(1, i + 1)
    return out


def mask_of(count: int, op_ids: Iterable[int]) -> bytearray:
    mask = bytearray(count)
    for i in op_ids:
        mask[i] = 1
    return mask


def and_not_mask(a: Mask, b: Mask) -> bytearray:
    """Ops set in ``a`` but not in ``b``, at C speed via big ints."""
    n = len(a)
    return bytearray((int.from_bytes(a, "little") & ~int.from_bytes(b, "little")).to_bytes(n, "little"))
