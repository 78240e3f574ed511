"""Find the step-trace points of a TensorFlow training graph.

Upstream (GE, MindSpore) takes the first consumer of the first data node as FP
and the last input of the last all-reduce / net output as BP, silently. Here
every choice is derived from the graph's structure and explained in
``TracePoints.reasons``; wrong user names are errors, not empty traces.

The rules, in the order they are applied
----------------------------------------
1. **Gradient ops** are ops in a gradient scope: ``gradients/``,
   ``gradients_N/`` (also nested, e.g. ``training/Adam/gradients/``),
   ``gradient_tape/``, or any ``<op>_grad/`` scope (what tf.gradients and
   GradientTape create per op, so a custom ``tf.gradients(name=...)`` is
   found too).
2. **Optimizer updates** are ``Apply*``/``ResourceApply*``/``*SparseApply*``
   ops, plus ``Assign*``/``Scatter*`` ops whose value is computed from gradient
   ops (so variable initializers and batch-norm statistic updates are not
   updates; gradient-accumulation ``AssignAdd`` and updates inside loss-scale
   ``tf.cond`` are). "Computed from" follows values, not predicates: a
   Switch/If condition decides whether an op runs, so the loss-scale update
   guarded by the gradients' is-finite check is not fed by gradients. A
   control-flow-v2 call op (If/While/PartitionedCall...) whose function body
   (transitively) holds such ops counts as one update at the outer level.
3. **Iteration end** (the train op): the ``train_op`` argument; else the
   graph's ``train_op`` collection (tf.Graph / MetaGraphDef / SavedModel),
   the entry running the most updates, or, when that entry is consumed inside
   the graph (v1 loss scaling builds the optimizer inside a ``tf.cond``), the
   sink that runs it; a collection whose entries run no update is ignored
   with a warning. Else, among the sink ops (no consumers) downstream of the
   updates, the one whose ancestors hold the most updates; ties go to a name
   like ``train``, ``*_train_op`` or ``group_deps``, then to the later op. No
   update reachable => an inference graph: ``is_training=False``,
   fp/bp/iteration_end None. Everything below only considers ops the
   iteration end depends on, so a test iterator, a test tower or an
   initializer is never chosen.
4. **Loss and regions**: the loss ops are the forward ops that gradient ops
   read and that no other such op depends on (for
   ``tf.losses.sparse_softmax_cross_entropy`` that is the loss' own inputs,
   since ``value_grad`` reads them). The *forward region* is the loss ops and
   their data ancestors. The *backward region* is everything between the loss
   and the updates: value descendants of the loss and of the gradient ops that
   feed an update, minus the forward region. That pulls in the ops that are
   not named like gradients but sit between backprop and the optimizer
   (``clip_by_global_norm``, loss-scale unscaling, all-reduces). With no
   gradient-scope op feeding any update (a renamed graph), each update's
   deepest input (longest chain from the graph's sources) is taken as its
   gradient, with a warning.
5. **Data inputs** (``get_next``): ``IteratorGetNext``, ``IteratorGetNextSync``,
   ``IteratorGetNextAsOptional`` (its ``OptionalGetValue`` is plumbing),
   ``MultiDeviceIteratorGetNextFromShard``, ``QueueDequeue*`` (Estimator's
   ``numpy_input_fn``) in the forward region. Only when none is there do
   ``Placeholder`` ops in the forward region count (a feed_dict pipeline),
   except scalar or bool ones (learning rates, keep_prob, is_training flags)
   and ``PlaceholderWithDefault`` (Keras' learning phase). In an inference
   graph (nothing is traced) get_next lists the data inputs that have
   consumers, for information.
6. **FP**: for each output tensor of a data input, count the compute ops it
   reaches in the forward region; take the tensor that reaches the most
   (features rather than labels, whatever their order), then walk from it
   through plumbing (Identity, Cast, Reshape, ExpandDims, Squeeze, Transpose,
   ReadVariableOp, v1 control flow Switch/Merge/Enter/Exit/NextIteration,
   tf.data ops) without following metadata ops (Shape, Size, Rank...), and
   take the compute op reached first in topological order. Functional control
   flow (While/If/PartitionedCall) is compute at this level. With no data
   input: the first compute op of the forward region.
7. **BP**: each update input from the backward region is traced back through
   plumbing (Identity, Switch/Exit, a loop accumulator's Merge/NextIteration)
   to the op that computes it; those tensors are ``bp_inputs``. With
   all-reduces: BP is the gradient op feeding the last all-reduce
   (topological order), and ``bp_inputs`` are the all-reduce inputs (plus any
   gradient that reaches an update without one); tensors computed after an
   all-reduce are never listed. Without all-reduces: BP is the last gradient
   backprop computes, i.e. the one for the variable the forward pass reads
   first (backprop runs in reverse forward order). This is the "last gradient
   op in topological order" of the upstream manual, but measured in execution
   order: graph-creation order is not that for v1 while loops, whose resource
   gradient accumulators are created after everything else. Gradients whose
   variable is unknown or never read by the forward pass (accumulation
   buffers, updates inside a v2 cond) rank by depth, the longest chain of
   ops from the graph's sources; topological order breaks ties.
8. **All-reduce groups**: communication ops (all-reduce, gather, all-to-all)
   in the backward region, in topological order; consecutive ones form one
   group, and a backward compute op that is not downstream of a communication
   op starts a new group. (Horovod/collective optimizers that reduce after
   tf.gradients give one group; per-layer hooks give one group per layer.)
9. **User names**: an exact op name wins (a tensor name ``op:0`` means its
   op). A name not in the graph raises TracePointsError listing the five
   closest op names. A name that exists but is off the training path (not run
   by the iteration end, e.g. an initializer; an FP in the backward pass; a BP
   in the forward pass) is used, with a ``warning: `` reason.

Topological order is GraphDef order when that is already topological (graphs
built by the Python API are, apart from NextIteration back edges), else a
deterministic Kahn order; all walks are iterative and cycle-safe.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from npu_tf_profiling.graph_points import functions, optypes
from npu_tf_profiling.graph_points.errors import unknown_op_error
from npu_tf_profiling.graph_points.index import GraphIndex, and_not_mask, ids_in, mask_of, paused_gc
from npu_tf_profiling.graph_points.loading import LoadedGraph, load_graph
from npu_tf_profiling.graph_points.points import TracePoints

_MAX_DATA_TENSORS = 32   # data tensors whose forward reach is measured (feed_dict graphs can have many)
_MAX_SINK_CANDIDATES = 64
_DT_BOOL, _DT_RESOURCE, _DT_VARIANT = 10, 20, 21


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


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
            self._analyse(loaded, train_op, index)

    def _analyse(self, loaded: LoadedGraph, train_op: str | None, index: GraphIndex | None) -> None:
        self.loaded = loaded
        self.index = idx = index if index is not None else GraphIndex(loaded.graph_def)
        self.count = n = len(idx)
        self._notes: list[str] = []
        types = idx.types
        type_set = set(types)
        compute_flag = {t: optypes.is_compute_type(t) for t in type_set}
        self.is_compute = [compute_flag[t] for t in types]

        if idx.missing_inputs:
            shown = ", ".join(repr(m) for m in idx.missing_inputs[:3])
            self._notes.append(
                f"warning: {len(idx.missing_inputs)} op input(s) name ops missing from the graph "
                f"(e.g. {shown}); the file may be truncated or hand-edited"
            )

        # 1. gradient-named ops
        grad_search = optypes.GRADIENT_NAME_RE.search
        self.grad_named = [i for i, name in enumerate(idx.names) if "grad" in name and grad_search(name)]
        grad_named_mask = mask_of(n, self.grad_named)

        # 2. optimizer updates anywhere in the graph (incl. inside v2 cond/while bodies)
        apply_types = {t for t in type_set if optypes.is_apply_type(t)}
        assign_types = type_set & optypes.ASSIGN_TYPES
        self._called_types: set[str] = set()  # op types that are direct calls of updating functions
        call_kinds = self._function_call_updates(type_set)
        grad_desc: bytearray | None = None
        updates_all: list[int] = []
        for i, t in enumerate(types):
            if t in apply_types or call_kinds.get(i) == functions.APPLY:
                updates_all.append(i)
            elif t in assign_types or i in call_kinds:
                if grad_desc is None:
                    grad_desc = idx.reach(self.grad_named, backward=False, values_only=True)
                if any(grad_desc[j] for j, _ in self._value_inputs(i)):
                    updates_all.append(i)
        self.updates_all = updates_all
        self.call_updates = [i for i in updates_all if i in call_kinds]  # If/While/... with updates inside

        # 3. iteration end
        self.train_id, self.train_reason = self._choose_train_op(train_op, updates_all)

        # defaults for the inference case
        empty = bytearray(n)
        self.in_step = empty
        self.forward = empty
        self.backward = empty
        self.updates: list[int] = []
        self.grad_updates: list[int] = []
        self.losses: list[int] = []
        self.collectives: list[int] = []
        self.forward_collectives: list[int] = []
        self.bp_sources: list[tuple[int, int]] = []
        self.bp_ranked: list[int] = []  # bp candidates, most likely first
        self.bp_id: int | None = None
        self.bp_reason = ""
        self.groups: list[list[int]] = []
        self._post_comm: bytearray | None = None  # ops computed from an all-reduce's output
        self.is_training = False
        if self.train_id is not None:
            self.in_step = idx.reach([self.train_id], backward=True)
            self.updates = [u for u in updates_all if self.in_step[u]]
        if self.updates:
            self._find_regions(grad_named_mask)
            self.grad_updates = [u for u in self.updates if any(self.backward[j] for j, _ in self._value_inputs(u))]
            self.is_training = bool(self.grad_updates)
        if self.is_training:
            self._find_collectives()
            self._find_bp()

        # 5./6. data inputs and FP
        self.data_ops, self.skipped_data_ops, self.data_reason = self._find_data_inputs()
        self.fp_id: int | None = None
        self.fp_reason = ""
        self.forward_reach: list[int] = []
        if self.is_training:
            self._find_fp()
        self.global_step, self.global_step_reason = self._find_global_step()

    def _value_inputs(self, op: int) -> list[tuple[int, int]]:
        """The (producer, port) inputs of an update that carry values: not
        the variable of an Assign/Apply, not the predicate or branch index of
        an If/Case (a loss-scale cond's is-finite check is not a gradient)."""
        idx = self.index
        pairs = list(zip(idx.data_in[op], idx.data_port[op]))
        t = idx.types[op]
        if t in functions.PASS_ALL_INPUTS_TYPES or (t not in functions.FUNCTION_CALL_TYPES and t in self._called_types):
            return pairs
        if t in functions.FUNCTION_CALL_TYPES and pairs:
            # The predicate is often passed into the branches as well.
            return [p for p in pairs[1:] if p != pairs[0]]
        return pairs[1:]

    def _function_call_updates(self, type_set: set[str]) -> dict[int, str]:
        """Call ops (If/While/PartitionedCall... or direct function calls)
        whose function bodies update variables: op id -> APPLY/ASSIGN."""
        library = getattr(self.loaded.graph_def, "library", None)
        if library is None or not library.function:
            return {}
        updating = functions.updating_functions(library)
        if not updating:
            return {}
        self._called_types = type_set & set(updating)
        call_types = (type_set & functions.FUNCTION_CALL_TYPES) | self._called_types
        found = {}
        for i, t in enumerate(self.index.types):
            if t in call_types:
                kind = functions.call_update_kind(self.index.node_def(i), updating)
                if kind is not None:
                    found[i] = kind
        return found

    # ------------------------------------------------------------- train op
    def _choose_train_op(self, train_op: str | None, updates_all: list[int]) -> tuple[int | None, str]:
        idx = self.index
        names = idx.names
        if train_op:
            found = idx.get_id(train_op)
            if found is None:
                raise unknown_op_error("train_op", train_op, idx.names)
            return found, f"iteration_end = {names[found]}: given as train_op"
        hinted = [i for i in (idx.get_id(h) for h in self.loaded.train_ops) if i is not None]
        if hinted:
            update_mask = mask_of(self.count, updates_all)
            counts = {h: sum(1 for i in ids_in(idx.reach([h], backward=True)) if update_mask[i]) for h in hinted}
            best = max(hinted, key=lambda h: (counts[h], idx.topo_pos[h]))
            if counts[best] or not updates_all:
                why = ("the graph's train_op collection" if len(hinted) == 1 else
                       f"of the {len(hinted)} ops in the train_op collection, the one running the most optimizer "
                       f"updates ({counts[best]})")
                if not idx.data_out[best] and not idx.ctrl_out[best]:
                    return best, f"iteration_end = {names[best]}: {why}"
                # Consumed inside the graph (an optimizer built inside a v1
                # tf.cond, as loss scaling does): the step is the sink that runs it.
                ranked, sink_counts = self._rank_sinks([best], updates_all)
                # Only a sink that can be the step (a NoOp group, an update, compute) replaces it:
                # a read of the variable it assigns (MultiWorkerMirroredStrategy's global-step
                # increment is read back) is plumbing nobody runs as the step.
                top_type = idx.types[ranked[0]] if ranked else ""
                if ranked and sink_counts[ranked[0]] >= counts[best] and (
                        top_type == "NoOp" or not optypes.is_plumbing_type(top_type)):
                    return ranked[0], (
                        f"iteration_end = {names[ranked[0]]}: the sink op that runs {names[best]} ({why}), "
                        "which is itself consumed inside the graph"
                    )
                return best, f"iteration_end = {names[best]}: {why}"
            self._notes.append(
                "warning: the train_op collection (" + ", ".join(names[h] for h in hinted)
                + ") runs no optimizer update; the iteration end was detected from the graph instead"
            )
        if not updates_all:
            return None, ""
        ranked, counts = self._rank_sinks(updates_all, updates_all)
        best = ranked[0]
        reason = (
            f"iteration_end = {names[best]}: the sink op that runs the most optimizer updates "
            f"({counts[best]} of {len(updates_all)})"
        )
        others = [s for s in ranked[1:] if counts[s] > 0][:3]
        if others:
            reason += "; other candidates: " + ", ".join(f"{names[s]} ({counts[s]})" for s in others)
        return best, reason

    def _rank_sinks(self, starts: list[int], updates_all: list[int]) -> tuple[list[int], dict[int, int]]:
        """Sink ops (no consumers) downstream of ``starts``, best train-op
        candidate first: most updates run, then a train-like name, then later."""
        idx = self.index
        downstream = idx.reach(starts, backward=False)
        data_out, ctrl_out, types = idx.data_out, idx.ctrl_out, idx.types
        sinks = [i for i in ids_in(downstream) if not data_out[i] and not ctrl_out[i]]
        # An unused read_value() of an assign is a sink too, but nobody runs it
        # as the step: prefer NoOps (tf.group), updates and compute ops.
        real = [i for i in sinks if types[i] == "NoOp" or not optypes.is_plumbing_type(types[i])]
        sinks = real or sinks or ids_in(downstream)  # no sink at all: a cycle, consider everything
        preferred = optypes.TRAIN_OP_NAME_RE.search
        names, pos = idx.names, idx.topo_pos
        if len(sinks) > _MAX_SINK_CANDIDATES:
            sinks = sorted(sinks, key=lambda i: (preferred(names[i]) is None, -pos[i]))[:_MAX_SINK_CANDIDATES]
        around_updates = idx.reach(updates_all, backward=False)
        for u in updates_all:
            around_updates[u] = 1
        counts = {}
        for sink in sinks:
            reached = idx.reach([sink], backward=True, within=around_updates)
            counts[sink] = sum(1 for u in updates_all if reached[u])
        ranked = sorted(sinks, key=lambda i: (counts[i], preferred(names[i]) is not None, pos[i]), reverse=True)
        return ranked, counts

    # ------------------------------------------------------------- regions
    def _find_regions(self, grad_named_mask: bytearray) -> None:
        idx = self.index
        data_in = idx.data_in
        feeds_updates = idx.reach(self.updates, backward=True, values_only=True)
        update_mask = mask_of(self.count, self.updates)
        grads = [g for g in self.grad_named if feeds_updates[g] and not update_mask[g]]
        if grads:
            read_by_grads = {j for g in grads for j in data_in[g] if not grad_named_mask[j]}
            upstream = idx.reach([j for m in read_by_grads for j in data_in[m]], backward=True, data_only=True)
            losses = [m for m in read_by_grads if not upstream[m]] or sorted(read_by_grads)
            self.losses = idx.sort_topo(losses)
            forward = idx.reach(self.losses, backward=True, data_only=True)
            between = idx.reach(grads + self.losses, backward=False, values_only=True, within=feeds_updates)
            backward = and_not_mask(and_not_mask(between, forward), update_mask)
        else:
            # No gradient-named op feeds an update: a hand-built or renamed
            # graph. Take each update's deepest input (the one at the end of
            # the longest chain of ops: hyper-parameters are shallow) as its
            # gradient.
            depth, types = idx.depth(), idx.types
            backward = bytearray(self.count)
            for u in self.updates:
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
            self._notes.append(
                "warning: no gradient-scope ops (gradients/, gradient_tape/, *_grad/) feed the updates; "
                "each update's deepest input is taken as its gradient"
            )
        self.forward = forward
        self.backward = backward

    # ---------------------------------------------------------- collectives
    def _find_collectives(self) -> None:
        idx = self.index
        comm = [i for i, t in enumerate(idx.types) if t in optypes.COLLECTIVE_TYPES and self.in_step[i]]
        comm = idx.sort_topo(comm)
        self.collectives = [c for c in comm if self.backward[c]]
        self.forward_collectives = [c for c in comm if not self.backward[c]]
        if not self.collectives:
            return
        post = idx.reach(self.collectives, backward=False, data_only=True, within=self.backward)
        self._post_comm = post
        is_comm = mask_of(self.count, self.collectives)
        groups: list[list[int]] = []
        current: list[int] = []
        backward_ids = idx.sort_topo(ids_in(self.backward))
        is_compute = self.is_compute
        for i in backward_ids:
            if is_comm[i]:
                current.append(i)
            elif is_compute[i] and not post[i] and current:
                groups.append(current)
                current = []
        if current:
            groups.append(current)
        self.groups = groups

    # ------------------------------------------------------------------- bp
    def _resolve(self, op: int, port: int, post: bytearray | None) -> tuple[int, int]:
        """Walk back from tensor op:port through plumbing while staying in the
        backward region (and upstream of any all-reduce)."""
        idx = self.index
        seen = set()
        while op not in seen:
            seen.add(op)
            t = idx.types[op]
            inputs = idx.data_in[op]
            if t in optypes.PASS_THROUGH_SAME_PORT:
                k = port
            elif t in optypes.PASS_THROUGH_INPUT0:
                k = 0
            elif t in optypes.MERGE_TYPES and inputs:
                # A loop accumulator's value comes round through NextIteration;
                # a cond's Merge takes the later-computed branch.
                back = [n for n, j in enumerate(inputs) if idx.types[j] in optypes.BACK_EDGE_TYPES]
                k = back[0] if back else max(range(len(inputs)), key=lambda n: idx.topo_pos[inputs[n]])
            else:
                break
            if k >= len(inputs):
                break
            src = inputs[k]
            if not self.backward[src] or (post is not None and post[src]):
                break
            op, port = src, idx.data_port[op][k]
        return op, port

    def _find_bp(self) -> None:
        idx = self.index
        post = self._post_comm
        pos = idx.topo_pos
        comm_mask = mask_of(self.count, self.collectives)
        sources: dict[tuple[int, int], None] = {}
        per_consumer: dict[int, list[tuple[int, int]]] = {}
        for consumer in self.grad_updates + self.collectives:
            found = []
            pairs = (zip(idx.data_in[consumer], idx.data_port[consumer]) if consumer in self.collectives
                     else self._value_inputs(consumer))
            for src, port in pairs:
                if not self.backward[src] or comm_mask[src] or (post is not None and post[src]):
                    continue
                resolved = self._resolve(src, port, post)
                sources[resolved] = None
                found.append(resolved)
            per_consumer[consumer] = found
        self.bp_sources = sorted(sources, key=lambda s: (pos[s[0]], s[1]))
        names = idx.names
        if self.collectives:
            ranked_ops = [op for c in reversed(self.collectives)
                          for op, _ in sorted(per_consumer.get(c, ()), key=lambda s: -pos[s[0]])]
            self.bp_ranked = list(dict.fromkeys(ranked_ops))
            for c in reversed(self.collectives):
                if per_consumer.get(c):
                    producer = max(per_consumer[c], key=lambda s: pos[s[0]])[0]
                    self.bp_id = producer
                    kind = optypes.collective_kind(idx.types[c])
                    self.bp_reason = (
                        f"bp = {names[producer]}: the gradient op feeding the last {kind} "
                        f"{names[c]} ({idx.types[c]}, {len(self.collectives)} communication ops in the backward pass)"
                    )
                    return
        # Backprop runs in reverse forward order, so the gradient computed last
        # is the one of the variable the forward pass uses first. That is the
        # execution order even where graph-creation order is not (v1 while-loop
        # accumulators are created after everything else); topological order
        # breaks ties and covers updates of variables the forward pass never
        # reads (gradient-accumulation buffers).
        call_updates = set(self.call_updates)
        ranked: list[tuple[tuple[int, ...], int, str]] = []
        depth: list[int] | None = None
        for u in self.grad_updates:
            variable = self._variable_of(u) if u not in call_updates else None
            first_use = self._first_forward_use(variable) if variable is not None else None
            if first_use is None and depth is None:
                depth = idx.depth()
            for op, port in per_consumer.get(u, ()):
                key = (first_use is not None, -(first_use if first_use is not None else 0),
                       depth[op] if depth is not None else 0, pos[op], port)
                ranked.append((key, op, names[variable] if variable is not None else ""))
        if ranked:
            ranked.sort(reverse=True)
            self.bp_ranked = list(dict.fromkeys(op for _, op, _ in ranked))
            key, producer, variable_name = ranked[0]
            self.bp_id = producer
            kinds = sorted({idx.types[u] for u in self.grad_updates})
            shown = ", ".join(kinds[:3]) + (", ..." if len(kinds) > 3 else "")
            feeding = (f"of the {_count(len(self.bp_sources), 'gradient tensor')} feeding the "
                       f"{_count(len(self.grad_updates), 'optimizer update')} ({shown})")
            if key[0]:
                self.bp_reason = (f"bp = {names[producer]}: {feeding}, the one for {variable_name}, the variable "
                                  "the forward pass uses first, so backprop computes it last")
            else:
                self.bp_reason = (f"bp = {names[producer]}: {feeding}, the one at the end of the longest chain "
                                  "of ops, so computed last")

    def _variable_of(self, update: int) -> int | None:
        """The variable an Apply/Assign updates: input 0, followed back
        through plumbing (a v1 tf.cond passes the handle through a Switch)."""
        idx = self.index
        if not idx.data_in[update]:
            return None
        op = idx.data_in[update][0]
        for _ in range(64):
            if idx.types[op] not in optypes.PASS_THROUGH_INPUT0 or not idx.data_in[op]:
                break
            op = idx.data_in[op][0]
        return op

    def _first_forward_use(self, variable: int) -> int | None:
        """Topological position of the first forward compute op reading
        ``variable`` (through reads, Identity, Enter...), or None."""
        idx = self.index
        forward, is_compute, pos = self.forward, self.is_compute, idx.topo_pos
        seen = {variable}
        stack = [variable]
        best: int | None = None
        while stack:
            i = stack.pop()
            for j in idx.data_out[i]:
                if j in seen or not forward[j]:
                    continue
                seen.add(j)
                if is_compute[j]:
                    if best is None or pos[j] < best:
                        best = pos[j]
                elif idx.types[j] not in optypes.METADATA_TYPES:
                    stack.append(j)
        return best

    # --------------------------------------------------------- data inputs
    def _placeholder_is_batch(self, i: int) -> bool:
        """A Placeholder that can carry a batch: not scalar, not bool/handle."""
        attrs = self.index.node_def(i).attr
        if "dtype" in attrs and attrs["dtype"].type in (_DT_BOOL, _DT_RESOURCE, _DT_VARIANT):
            return False
        if "shape" in attrs:
            shape = attrs["shape"].shape
            if not shape.unknown_rank and len(shape.dim) == 0:
                return False
        return True

    def _find_data_inputs(self) -> tuple[list[int], list[int], str]:
        idx = self.index
        types, names = idx.types, idx.names
        iterators = [i for i, t in enumerate(types) if t in optypes.ITERATOR_INPUT_TYPES]
        if self.is_training:
            region = self.forward
        else:
            # No training step: data inputs that feed anything at all.
            region = bytearray(self.count)
            for i in range(self.count):
                if idx.data_in[i]:
                    region[i] = 1
            for i in iterators:
                if idx.data_out[i]:
                    region[i] = 1
        chosen = [i for i in iterators if region[i]]
        kind = "iterator/queue data input"
        candidates = iterators
        not_batches: list[int] = []
        if not chosen:
            placeholders = [i for i, t in enumerate(types) if t in optypes.PLACEHOLDER_TYPES]
            candidates = placeholders
            feeding = [i for i in placeholders if (region[i] if self.is_training else idx.data_out[i])]
            chosen = [i for i in feeding if self._placeholder_is_batch(i)]
            not_batches = [i for i in feeding if i not in set(chosen)]
            kind = "feed_dict Placeholder"
        chosen = idx.sort_topo(chosen)
        listed = set(chosen) | set(not_batches)
        skipped = [i for i in candidates if i not in listed]
        if not chosen:
            return [], skipped, (
                "get_next = none: no iterator, queue or batch Placeholder feeds the loss (synthetic data?)"
                if self.is_training else "get_next = none: no data input op in the graph"
            )
        where = "feeding the training step" if self.is_training else "in this graph"
        reason = f"get_next = {', '.join(names[i] for i in chosen)}: {kind}(s) {where}"

        def shown(ops: list[int]) -> str:
            return ", ".join(names[i] for i in ops[:4]) + (", ..." if len(ops) > 4 else "")

        if not_batches:
            reason += f"; not listed because scalar or bool Placeholders are settings, not batches: {shown(not_batches)}"
        if skipped and self.is_training:
            reason += f"; not listed because they do not feed the loss of the training step: {shown(skipped)}"
        return chosen, skipped, reason

    # ------------------------------------------------------------------- fp
    def _data_tensors(self) -> list[tuple[int, int]]:
        idx = self.index
        tensors: dict[tuple[int, int], None] = {}
        for d in self.data_ops:
            for c in idx.data_out[d]:
                if not self.forward[c]:
                    continue
                for src, port in zip(idx.data_in[c], idx.data_port[c]):
                    if src == d:
                        tensors[(d, port)] = None
        return sorted(tensors, key=lambda t: (idx.topo_pos[t[0]], t[1]))

    def _walk_forward(self, op: int, port: int) -> tuple[list[int], list[int], dict[int, int]]:
        """From tensor op:port, inside the forward region: the compute ops
        reached through plumbing only (the frontier), every compute op reached
        at all, and the parent links of the plumbing walk (to explain the path)."""
        idx = self.index
        forward, is_compute, types = self.forward, self.is_compute, idx.types
        metadata = optypes.METADATA_TYPES
        data_in, data_port, data_out = idx.data_in, idx.data_port, idx.data_out
        starts = [c for c in dict.fromkeys(data_out[op]) if forward[c]
                  and any(s == op and p == port for s, p in zip(data_in[c], data_port[c]))]
        seen = bytearray(self.count)
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

    def _find_fp(self) -> None:
        idx = self.index
        names, pos = idx.names, idx.topo_pos
        tensors = self._data_tensors()[:_MAX_DATA_TENSORS]
        results = []
        for op, port in tensors:
            frontier, reached, parent = self._walk_forward(op, port)
            if frontier:
                results.append((len(reached), op, port, frontier, reached, parent))
        if results:
            best = max(results, key=lambda r: (r[0], -pos[r[1]], -r[2]))
            count, op, port, frontier, reached, parent = best
            fp = min(frontier, key=pos.__getitem__)
            self.fp_id = fp
            self.forward_reach = idx.sort_topo(reached)
            tensor = idx.tensor_name(op, port)
            path = []
            step = parent.get(fp)
            while step is not None and len(path) < 50:
                path.append(idx.types[step])
                step = parent.get(step)
            via = f" (via {', '.join(reversed(path))})" if path else ""
            reason = f"fp = {names[fp]}: first compute op consuming {tensor}{via}"
            if len(results) > 1:
                others = sorted((r for r in results if r is not best), key=lambda r: -r[0])[:3]
                shown = ", ".join(f"{idx.tensor_name(r[1], r[2])}: {r[0]}" for r in others)
                reason += (f"; {tensor} reaches the loss through the most compute ops "
                           f"({count}; {shown})")
            self.fp_reason = reason
            return
        forward_compute = [i for i in ids_in(self.forward) if self.is_compute[i]]
        if forward_compute:
            fp = min(forward_compute, key=pos.__getitem__)
            self.fp_id = fp
            self.forward_reach = idx.sort_topo(forward_compute)
            self.fp_reason = (f"fp = {names[fp]}: no data input reaches a compute op, so the first compute op "
                              f"of the forward pass in topological order")

    # ---------------------------------------------------------- global step
    def _find_global_step(self) -> tuple[int | None, str]:
        idx = self.index
        for hint in self.loaded.global_steps:
            found = idx.get_id(hint)
            if found is not None:
                return found, f"global_step = {idx.names[found]}: the graph's global_step collection"
        for i, (name, t) in enumerate(zip(idx.names, idx.types)):
            if t in optypes.VARIABLE_TYPES and (name == "global_step" or name.endswith("/global_step")):
                return i, f"global_step = {name}: a {t} named global_step"
        return None, ""

    # -------------------------------------------------------------- output
    def _resolve_user(self, kind: str, name: str) -> tuple[int, list[str]]:
        idx = self.index
        found = idx.get_id(name)
        if found is None:
            raise unknown_op_error(kind, name, idx.names)
        notes = []
        if idx.names[found] != name:
            notes.append(f"{kind} {name!r} is a tensor name; using its op {idx.names[found]}")
        return found, notes

    def points(self, fp_point: str = "", bp_point: str = "") -> TracePoints:
        """TracePoints with user names (exact op names) taking precedence."""
        idx = self.index
        names = idx.names
        reasons: list[str] = []
        train_name = names[self.train_id] if self.train_id is not None else None
        if self.train_reason:
            reasons.append(self.train_reason)
        if not self.is_training:
            if self.train_id is None:
                reasons.append("is_training = False: no optimizer update (Apply*/ResourceApply*, or Assign* fed "
                               "by gradients) in the graph, so it is an inference graph; fp/bp are N/A")
            else:
                reasons.append(f"is_training = False: {train_name} runs no optimizer update fed by gradients; "
                               "fp/bp are N/A")
        else:
            reasons.append(f"is_training = True: {_count(len(self.grad_updates), 'optimizer update')} fed by gradients")
        reasons.append(self.data_reason)

        fp_id = self._chosen("fp_point", fp_point, self.fp_id, self.fp_reason, train_name, reasons)
        bp_id = self._chosen("bp_point", bp_point, self.bp_id, self.bp_reason, train_name, reasons)
        if not bp_point and not self.bp_reason and self.is_training:
            reasons.append("bp = none: no gradient tensor feeds the optimizer updates")

        if self.collectives:
            reasons.append(
                f"all_reduce = {len(self.collectives)} communication op(s) fed by gradients in "
                f"{len(self.groups)} group(s): consecutive in topological order, split by backward compute ops"
            )
        if self.forward_collectives:
            reasons.append(f"{len(self.forward_collectives)} communication op(s) outside the backward pass "
                           f"(e.g. {names[self.forward_collectives[0]]}) are not listed in all_reduce")
        if self.global_step_reason:
            reasons.append(self.global_step_reason)
        reasons.extend(self._notes)
        return TracePoints(
            fp=names[fp_id] if fp_id is not None else None,
            bp=names[bp_id] if bp_id is not None else None,
            bp_inputs=tuple(idx.tensor_name(op, port) for op, port in self.bp_sources),
            get_next=tuple(names[i] for i in self.data_ops),
            all_reduce=tuple(tuple(names[i] for i in group) for group in self.groups),
            iteration_end=train_name,
            global_step=names[self.global_step] if self.global_step is not None else None,
            is_training=self.is_training,
            reasons=tuple(r for r in reasons if r),
        )

    def _chosen(self, kind: str, user_name: str, auto_id: int | None, auto_reason: str | None,
                train_name: str | None, reasons: list[str]) -> int | None:
        """The user's op for `kind` (fp_point/bp_point) when given, else the automatic one; adds the reasons."""
        if not user_name:
            if auto_reason:
                reasons.append(auto_reason)
            return auto_id
        op, notes = self._resolve_user(kind, user_name)
        reasons.extend(notes)
        reasons.append(f"{kind.split('_')[0]} = {self.index.names[op]}: given as {kind}")
        reasons.extend(self._check_user_point(kind, op, train_name))
        return op

    def _check_user_point(self, kind: str, op: int, train_name: str | None) -> list[str]:
        name = self.index.names[op]
        if not self.is_training:
            return [f"warning: {kind} {name} is in a graph with no training step; it will not be traced"]
        if not self.in_step[op]:
            return [f"warning: {kind} {name} does not run in the training step (it is not an ancestor of "
                    f"{train_name}; e.g. an initializer or an op of another model), so it will never be traced"]
        if kind == "fp_point":
            if self.backward[op]:
                return [f"warning: fp_point {name} is in the backward pass (between the loss and the optimizer "
                        "updates), so fp_start would be recorded after the forward pass"]
            if not self.forward[op]:
                return [f"warning: fp_point {name} runs in the training step but not on the forward path to "
                        "the loss"]
        else:
            if self.forward[op]:
                return [f"warning: bp_point {name} is in the forward pass (it feeds the loss), so bp_end would "
                        "be recorded before the backward pass ends"]
            if not self.backward[op]:
                return [f"warning: bp_point {name} runs in the training step but not between the loss and the "
                        "optimizer updates"]
        return []

    def candidates(self, top: int) -> Candidates:
        """The first ``top`` forward and last ``top`` backward candidates."""
        idx = self.index
        names, pos = idx.names, idx.topo_pos
        forward = list(self.forward_reach[:top])
        if len(forward) < top:
            chosen = set(forward)
            more = [i for i in idx.sort_topo(ids_in(self.forward)) if self.is_compute[i] and i not in chosen]
            forward.extend(more[: top - len(forward)])
        backward = list(self.bp_ranked[:top])
        if len(backward) < top:
            chosen = set(backward)
            rest = [i for i in ids_in(self.backward) if self.is_compute[i] and i not in chosen]
            rest.sort(key=lambda i: -pos[i])
            backward.extend(rest[: top - len(backward)])
        return Candidates(tuple(names[i] for i in forward), tuple(names[i] for i in backward[:top]))


def analyse(graph: Any, *, train_op: str | None = None) -> Discovery:
    """Load ``graph`` (tf.Graph, GraphDef, MetaGraphDef or path) and analyse it."""
    return Discovery(load_graph(graph), train_op=train_op)


def find_trace_points(graph: Any, fp_point: str = "", bp_point: str = "", *,
                      train_op: str | None = None) -> TracePoints:
    """The step-trace points of ``graph``; see the module docstring for the rules.

    ``fp_point``/``bp_point``: exact op names that override discovery (empty:
    automatic). ``train_op``: the op the training loop runs (auto-detected when
    None). Raises GraphLoadError for unreadable input and TracePointsError for
    a user-given name that is not in the graph.
    """
    return analyse(graph, train_op=train_op).points(fp_point, bp_point)
