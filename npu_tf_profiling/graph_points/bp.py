"""BP, the end of the backward pass (rule 8 of docs/trace_points.md).

The gradients are found where the optimizer (or an all-reduce) reads them,
then traced back through plumbing to the ops that compute them. BP is the one
computed last: with all-reduces, the gradient feeding the last one; without,
the gradient of the variable the forward pass reads first, since backprop
runs in reverse forward order. Execution order is what matters, not
graph-creation order, which differs for v1 while loops.
"""
from __future__ import annotations

from dataclasses import dataclass

from npu_tf_profiling.graph_points import optypes
from npu_tf_profiling.graph_points.collectives import Collectives
from npu_tf_profiling.graph_points.index import GraphIndex, mask_of
from npu_tf_profiling.graph_points.points import counted
from npu_tf_profiling.graph_points.regions import Regions
from npu_tf_profiling.graph_points.updates import Updates


@dataclass(frozen=True)
class BackwardEnd:
    """op: the BP op (None: no gradient tensor feeds the updates).
    inputs: the gradient tensors (op, port) as backprop produces them, topological order.
    ranked: BP candidates, most likely first.
    """

    op: int | None = None
    reason: str = ""
    inputs: tuple[tuple[int, int], ...] = ()
    ranked: tuple[int, ...] = ()


def find_bp(index: GraphIndex, updates: Updates, regions: Regions, collectives: Collectives,
            is_compute: list[bool]) -> BackwardEnd:
    """Rule 8 for a training graph."""
    pos = index.topo_pos
    per_consumer = _gradients_read(index, updates, regions, collectives)
    sources = {s: None for found in per_consumer.values() for s in found}
    inputs = tuple(sorted(sources, key=lambda s: (pos[s[0]], s[1])))
    return (_before_last_collective(index, collectives, per_consumer, inputs)
            or _by_forward_order(index, updates, regions, is_compute, per_consumer, inputs))


def _gradients_read(index: GraphIndex, updates: Updates, regions: Regions,
                    collectives: Collectives) -> dict[int, list[tuple[int, int]]]:
    """For each update fed by gradients and each backward all-reduce: the
    gradient tensors it reads, resolved back through plumbing."""
    backward, after = regions.backward, collectives.after
    comm_mask = mask_of(len(index), collectives.ops)
    gradient_mask = mask_of(len(index), updates.gradient_ops)
    update_mask = mask_of(len(index), updates.ops)
    per_consumer: dict[int, list[tuple[int, int]]] = {}
    for consumer in regions.gradient_updates + collectives.ops:
        found = []
        pairs = (zip(index.data_in[consumer], index.data_port[consumer]) if comm_mask[consumer]
                 else updates.value_inputs(index, consumer))
        for src, port in pairs:
            if not backward[src] or comm_mask[src] or (after is not None and after[src]):
                continue
            resolved = _resolve(index, src, port, backward, after)
            # An all-reduce's input is BP as upstream defines it (a packing concat included): only updates look further.
            behind = [] if comm_mask[consumer] else _gradients_behind(index, resolved, gradient_mask, backward, comm_mask, update_mask)
            found.extend([_resolve(index, op, p, backward, after) for op, p in behind] or [resolved])
        per_consumer[consumer] = list(dict.fromkeys(found))
    return per_consumer


def _gradients_behind(index: GraphIndex, tensor: tuple[int, int], gradient_mask: bytearray, backward: bytes,
                      comm_mask: bytearray, update_mask: bytearray) -> list[tuple[int, int]]:
    """The gradient-scope tensors a value is computed from, when it is optimizer math (else []).

    Optimizers that update by assignment (Keras' since 2.11, Keras 3: ``m.assign_add((g - m) * ...)``)
    compute the value they write from the gradient in ops of their own scope; the
    gradients end where backprop's scope (``gradient_tape/``, ``gradients/``) does.
    Without this, BP End would fall after the optimizer's arithmetic. The walk goes
    through the optimizer's own state updates too: TF1 Adam's sparse update of a ref
    variable writes ``var - lr * m_t / ...``, where ``m_t`` is a ``ScatterAdd`` of the
    gradient's values into a slot, itself an update (an embedding table trained by Adam).
    """
    op = tensor[0]
    if gradient_mask[op] or comm_mask[op] or not any(gradient_mask):
        return []
    found: dict[tuple[int, int], None] = {}
    seen = {op}
    stack = [op]
    while stack:
        node = stack.pop()
        for src, port in zip(index.data_in[node], index.data_port[node]):
            if gradient_mask[src]:
                found[(src, port)] = None
            elif (backward[src] or update_mask[src]) and not comm_mask[src] and src not in seen:
                seen.add(src)
                stack.append(src)
    return list(found)


def _before_last_collective(index: GraphIndex, collectives: Collectives, per_consumer: dict[int, list[tuple[int, int]]],
                            inputs: tuple[tuple[int, int], ...]) -> BackwardEnd | None:
    """BP as the gradient feeding the last all-reduce that reads one."""
    pos, names = index.topo_pos, index.names
    last = next((c for c in reversed(collectives.ops) if per_consumer.get(c)), None)
    if last is None:
        return None
    producer = max(per_consumer[last], key=lambda s: pos[s[0]])[0]
    ranked = [op for c in reversed(collectives.ops)
              for op, _ in sorted(per_consumer.get(c, ()), key=lambda s: -pos[s[0]])]
    kind = optypes.collective_kind(index.types[last])
    reason = (f"bp = {names[producer]}: the gradient op feeding the last {kind} {names[last]} "
              f"({index.types[last]}, {len(collectives.ops)} communication ops in the backward pass)")
    return BackwardEnd(producer, reason, inputs, tuple(dict.fromkeys(ranked)))


def _by_forward_order(index: GraphIndex, updates: Updates, regions: Regions, is_compute: list[bool],
                      per_consumer: dict[int, list[tuple[int, int]]],
                      inputs: tuple[tuple[int, int], ...]) -> BackwardEnd:
    """BP as the gradient backprop computes last.

    Backprop runs in reverse forward order, so the gradient computed last is
    the one of the variable the forward pass uses first. That is the
    execution order even where graph-creation order is not (v1 while-loop
    accumulators are created after everything else); topological order
    breaks ties and covers updates of variables the forward pass never reads
    (gradient-accumulation buffers)."""
    pos, names = index.topo_pos, index.names
    ranked: list[tuple[tuple[bool, int, int, int, int], int, str]] = []
    depth: list[int] | None = None
    for u in regions.gradient_updates:
        variable = _variable_of(index, u) if u not in updates.via_calls else None
        first_use = _first_forward_use(index, variable, regions.forward, is_compute) if variable is not None else None
        if first_use is None and depth is None:
            depth = index.depth()
        for op, port in per_consumer.get(u, ()):
            key = (first_use is not None, -(first_use if first_use is not None else 0),
                   depth[op] if depth is not None else 0, pos[op], port)
            ranked.append((key, op, names[variable] if variable is not None else ""))
    if not ranked:
        return BackwardEnd(None, "bp = none: no gradient tensor feeds the optimizer updates", inputs)
    ranked.sort(reverse=True)
    key, producer, variable_name = ranked[0]
    kinds = sorted({index.types[u] for u in regions.gradient_updates})
    shown = ", ".join(kinds[:3]) + (", ..." if len(kinds) > 3 else "")
    feeding = (f"of the {counted(len(inputs), 'gradient tensor')} feeding the "
               f"{counted(len(regions.gradient_updates), 'optimizer update')} ({shown})")
    if key[0]:
        reason = (f"bp = {names[producer]}: {feeding}, the one for {variable_name}, the variable "
                  "the forward pass uses first, so backprop computes it last")
    else:
        reason = (f"bp = {names[producer]}: {feeding}, the one at the end of the longest chain "
                  "of ops, so computed last")
    return BackwardEnd(producer, reason, inputs, tuple(dict.fromkeys(op for _, op, _ in ranked)))


def _resolve(index: GraphIndex, op: int, port: int, backward: bytes, after: bytes | None) -> tuple[int, int]:
    """Walk back from tensor op:port through plumbing while staying in the
    backward region (and upstream of any all-reduce)."""
    seen = set()
    while op not in seen:
        seen.add(op)
        t = index.types[op]
        inputs = index.data_in[op]
        if t in optypes.PASS_THROUGH_SAME_PORT:
            k = port
        elif t in optypes.PASS_THROUGH_INPUT0:
            k = 0
        elif t in optypes.MERGE_TYPES and inputs:
            # A loop accumulator's value comes round through NextIteration;
            # a cond's Merge takes the later-computed branch.
            back = [n for n, j in enumerate(inputs) if index.types[j] in optypes.BACK_EDGE_TYPES]
            k = back[0] if back else max(range(len(inputs)), key=lambda n: index.topo_pos[inputs[n]])
        else:
            break
        if k >= len(inputs):
            break
        src = inputs[k]
        if not backward[src] or (after is not None and after[src]):
            break
        op, port = src, index.data_port[op][k]
    return op, port


def _variable_of(index: GraphIndex, update: int) -> int | None:
    """The variable an Apply/Assign updates: input 0, followed back
    through plumbing (a v1 tf.cond passes the handle through a Switch)."""
    if not index.data_in[update]:
        return None
    op = index.data_in[update][0]
    for _ in range(64):
        if index.types[op] not in optypes.PASS_THROUGH_INPUT0 or not index.data_in[op]:
            break
        op = index.data_in[op][0]
    return op


def _first_forward_use(index: GraphIndex, variable: int, forward: bytes, is_compute: list[bool]) -> int | None:
    """Topological position of the first forward compute op reading
    ``variable`` (through reads, Identity, Enter...), or None."""
    pos = index.topo_pos
    seen = {variable}
    stack = [variable]
    best: int | None = None
    while stack:
        i = stack.pop()
        for j in index.data_out[i]:
            if j in seen or not forward[j]:
                continue
            seen.add(j)
            if is_compute[j]:
                if best is None or pos[j] < best:
                    best = pos[j]
            elif index.types[j] not in optypes.METADATA_TYPES:
                stack.append(j)
    return best
