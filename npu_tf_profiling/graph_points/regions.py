"""The loss, the forward region and the backward region (rule 4 of docs/trace_points.md).

Names alone do not delimit the backward pass: gradient clipping, loss-scale
unscaling and all-reduces sit between backprop and the optimizer without a
gradient-scope name. So the backward region is taken from the structure,
everything between the loss and the updates, and the forward region is the
loss with its data ancestors. A graph is a training graph when at least one
update of its step is fed from the backward region.
"""
from __future__ import annotations

from dataclasses import dataclass

from npu_tf_profiling.graph_points import optypes
from npu_tf_profiling.graph_points.index import GraphIndex, and_not_mask, mask_of
from npu_tf_profiling.graph_points.iteration_end import IterationEnd
from npu_tf_profiling.graph_points.points import counted
from npu_tf_profiling.graph_points.updates import Updates


@dataclass(frozen=True)
class Regions:
    """losses: the loss ops, in topological order.
    forward / backward: masks of the two regions (all zero when the step runs no update).
    gradient_updates: the step's updates fed from the backward region (GraphDef order).
    reason: the ``is_training = ...`` sentence; notes: warnings.
    """

    losses: tuple[int, ...]
    forward: bytes
    backward: bytes
    gradient_updates: tuple[int, ...]
    reason: str
    notes: tuple[str, ...] = ()

    @property
    def is_training(self) -> bool:
        return bool(self.gradient_updates)


def find_regions(index: GraphIndex, updates: Updates, step: IterationEnd) -> Regions:
    """Rule 4 for the updates the iteration end runs."""
    notes: list[str] = []
    if step.updates:
        losses, forward, backward = _split(index, updates, step.updates, notes)
        trained = tuple(u for u in step.updates if any(backward[j] for j, _ in updates.value_inputs(index, u)))
    else:
        losses, forward, backward, trained = (), bytes(len(index)), bytes(len(index)), ()
    if trained:
        reason = f"is_training = True: {counted(len(trained), 'optimizer update')} fed by gradients"
    elif step.op is None:
        reason = ("is_training = False: no optimizer update (Apply*/ResourceApply*, or Assign* fed by gradients) "
                  "in the graph, so it is an inference graph; fp/bp are N/A")
    else:
        reason = (f"is_training = False: {index.names[step.op]} runs no optimizer update fed by gradients; "
                  "fp/bp are N/A")
    return Regions(losses, forward, backward, trained, reason, tuple(notes))


def _split(index: GraphIndex, updates: Updates, step_updates: tuple[int, ...],
           notes: list[str]) -> tuple[tuple[int, ...], bytes, bytes]:
    """(losses, forward, backward) around ``step_updates``."""
    data_in = index.data_in
    count = len(index)
    feeds_updates = index.reach(step_updates, backward=True, values_only=True)
    update_mask = mask_of(count, step_updates)
    gradient_mask = mask_of(count, updates.gradient_ops)
    grads = [g for g in updates.gradient_ops if feeds_updates[g] and not update_mask[g]]
    losses: list[int] = []
    if grads:
        read_by_grads = {j for g in grads for j in data_in[g] if not gradient_mask[j]}
        upstream = index.reach([j for m in read_by_grads for j in data_in[m]], backward=True, data_only=True)
        losses = index.sort_topo([m for m in read_by_grads if not upstream[m]] or sorted(read_by_grads))
        forward = index.reach(losses, backward=True, data_only=True)
        between = index.reach(grads + losses, backward=False, values_only=True, within=feeds_updates)
        backward = and_not_mask(and_not_mask(between, forward), update_mask)
    else:
        # No gradient-named op feeds an update: a hand-built or renamed
        # graph. Take each update's deepest input (the one at the end of
        # the longest chain of ops: hyper-parameters are shallow) as its
        # gradient.
        depth, types = index.depth(), index.types
        backward = bytearray(count)
        for u in step_updates:
            inputs = [j for j in data_in[u][1:] if types[j] not in optypes.VARIABLE_TYPES]
            if not inputs:
                continue
            j = max(inputs, key=depth.__getitem__)
            # the gradient and the plumbing (gating Identities) it passes
            while not backward[j]:
                backward[j] = 1
                if types[j] not in optypes.PASS_THROUGH_INPUT0 or not data_in[j]:
                    break
                j = data_in[j][0]
        forward = and_not_mask(and_not_mask(feeds_updates, backward), update_mask)
        notes.append(
            "warning: no gradient-scope ops (gradients/, gradient_tape/, *_grad/) feed the updates; "
            "each update's deepest input is taken as its gradient"
        )
    return tuple(losses), bytes(forward), bytes(backward)
