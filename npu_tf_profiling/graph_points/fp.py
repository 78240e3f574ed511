"""FP, the start of the forward pass (rule 6 of docs/trace_points.md).

A data input yields several tensors (features, labels, weights) in no fixed
order; the features are the one that reaches the most compute on the way to
the loss. FP is the first compute op that tensor meets, walking through
plumbing (casts, reshapes, identities, v1 control flow, tf.data ops) but not
through metadata ops such as Shape, whose output is not the data.

A step may hold several forward passes: a GAN's generator runs on random
noise, then the critic on its output and on the batch. FP Start is when the
step's forward work starts, so a forward pass fed by noise that comes first in
topological order (program order: the generator's before the critic's) starts
it: FP is then the first op of that pass that reads a weight.
"""
from __future__ import annotations

from dataclasses import dataclass

from npu_tf_profiling.graph_points import optypes
from npu_tf_profiling.graph_points.data_inputs import DataInputs
from npu_tf_profiling.graph_points.index import GraphIndex, ids_in

_MAX_DATA_TENSORS = 32   # data tensors whose forward reach is measured (feed_dict graphs can have many)
_MAX_NOISE_WALK = 64     # ops walked from a random op to the first op reading a weight


@dataclass(frozen=True)
class ForwardStart:
    """op: the FP op (None: not a training graph, or no forward compute op).
    reach: forward compute ops in topological order, from the chosen data
    tensor's reach (the first forward candidates).
    """

    op: int | None = None
    reason: str = ""
    reach: tuple[int, ...] = ()


def find_fp(index: GraphIndex, data_inputs: DataInputs, forward: bytes, is_compute: list[bool]) -> ForwardStart:
    """Rule 6 for a training graph's ``forward`` region."""
    names, pos = index.names, index.topo_pos
    walks = []
    for op, port in _data_tensors(index, data_inputs, forward)[:_MAX_DATA_TENSORS]:
        frontier, reached, parent = _walk_forward(index, op, port, forward, is_compute)
        if frontier:
            walks.append((len(reached), op, port, frontier, reached, parent))
    if walks:
        best = max(walks, key=lambda r: (r[0], -pos[r[1]], -r[2]))
        count, op, port, frontier, reached, parent = best
        fp = min(frontier, key=pos.__getitem__)
        tensor = index.tensor_name(op, port)
        path: list[str] = []
        step = parent.get(fp)
        while step is not None and len(path) < 50:
            path.append(index.types[step])
            step = parent.get(step)
        via = f" (via {', '.join(reversed(path))})" if path else ""
        reason = f"fp = {names[fp]}: first compute op consuming {tensor}{via}"
        if len(walks) > 1:
            others = sorted((r for r in walks if r is not best), key=lambda r: -r[0])[:3]
            shown = ", ".join(f"{index.tensor_name(r[1], r[2])}: {r[0]}" for r in others)
            reason += (f"; {tensor} reaches the loss through the most compute ops "
                       f"({count}; {shown})")
        earlier = _noise_fed_start(index, forward, is_compute, before=pos[fp])
        if earlier is not None:
            start, noise = earlier
            reason = (f"fp = {names[start]}: the first op reading a weight in the forward pass fed by the random "
                      f"{index.types[noise]} {names[noise]}, which comes before the one fed by the data "
                      f"(a generator's before its critic's; that one: {names[fp]}, first compute op consuming {tensor})")
            fp = start
        return ForwardStart(fp, reason, tuple(index.sort_topo(reached)))
    forward_compute = [i for i in ids_in(forward) if is_compute[i]]
    if not forward_compute:
        return ForwardStart()
    fp = min(forward_compute, key=pos.__getitem__)
    return ForwardStart(fp, (f"fp = {names[fp]}: no data input reaches a compute op, so the first compute op "
                             f"of the forward pass in topological order"), tuple(index.sort_topo(forward_compute)))


def _noise_fed_start(index: GraphIndex, forward: bytes, is_compute: list[bool], before: int) -> tuple[int, int] | None:
    """The first forward op (topologically before position ``before``) that reads a weight and is fed by a
    random op through ops that read none: where a forward pass on noise (a GAN's generator) starts, with the
    random op. None when no such pass comes first. A dropout mask or a gradient penalty's mixing weight is
    made from random numbers too, but inside a forward pass, after its start."""
    pos, types, data_in, data_out = index.topo_pos, index.types, index.data_in, index.data_out
    weight_read = optypes.WEIGHT_READ_TYPES
    best: tuple[int, int] | None = None
    for noise in ids_in(forward):
        if pos[noise] >= before or not optypes.is_random_type(types[noise]):
            continue
        seen = {noise}
        stack = [noise]
        while stack and len(seen) < _MAX_NOISE_WALK:
            for j in data_out[stack.pop()]:
                if j in seen or not forward[j] or pos[j] >= before or types[j] in optypes.METADATA_TYPES:
                    continue
                seen.add(j)
                if is_compute[j] and any(types[k] in weight_read for k in data_in[j]):
                    if best is None or pos[j] < pos[best[0]]:
                        best = (j, noise)
                else:
                    stack.append(j)
    return best


def _data_tensors(index: GraphIndex, data_inputs: DataInputs, forward: bytes) -> list[tuple[int, int]]:
    """The (op, port) outputs of the data inputs read in the forward region, topological order."""
    tensors: dict[tuple[int, int], None] = {}
    for d in data_inputs.ops:
        for c in index.data_out[d]:
            if not forward[c]:
                continue
            for src, port in zip(index.data_in[c], index.data_port[c]):
                if src == d:
                    tensors[(d, port)] = None
    return sorted(tensors, key=lambda t: (index.topo_pos[t[0]], t[1]))


def _walk_forward(index: GraphIndex, op: int, port: int, forward: bytes,
                  is_compute: list[bool]) -> tuple[list[int], list[int], dict[int, int]]:
    """From tensor op:port, inside the forward region: the compute ops
    reached through plumbing only (the frontier), every compute op reached
    at all, and the parent links of the plumbing walk (to explain the path)."""
    types = index.types
    metadata = optypes.METADATA_TYPES
    data_in, data_port, data_out = index.data_in, index.data_port, index.data_out
    starts = [c for c in dict.fromkeys(data_out[op]) if forward[c]
              and any(s == op and p == port for s, p in zip(data_in[c], data_port[c]))]
    seen = bytearray(len(index))
    frontier: list[int] = []
    parent: dict[int, int] = {}
    reached: list[int] = []
    # phase 1: through plumbing only
    stack = []
    for c in starts:
        seen[c] = 1
        stack.append(c)
    while stack:
        i = stack.pop()
        t = types[i]
        if t in metadata:
            continue
        if is_compute[i]:
            frontier.append(i)
            continue
        for j in data_out[i]:
            if not seen[j] and forward[j]:
                seen[j] = 1
                parent[j] = i
                stack.append(j)
    # phase 2: everything reachable from the frontier (for the reach count)
    stack = list(frontier)
    while stack:
        i = stack.pop()
        reached.append(i)
        for j in data_out[i]:
            if not seen[j] and forward[j] and types[j] not in metadata:
                seen[j] = 1
                stack.append(j)
    compute_reached = [i for i in reached if is_compute[i]]
    return frontier, compute_reached, parent
