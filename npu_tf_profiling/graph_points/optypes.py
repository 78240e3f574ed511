"""The op-type vocabulary of point discovery: which ops read data, move data
without computing, update variables, or communicate.

Kept apart from the algorithm so a new op type (a vendor's GetNext, a new
collective) is a one-line change here, and so tests can check the vocabulary
on its own. Only op *types* live here; name patterns (gradient scopes) too,
since they are equally a matter of TensorFlow conventions.
"""
from __future__ import annotations

import re
from typing import Sequence

# --- data inputs -----------------------------------------------------------
# Ops that hand one batch to the step. IteratorGetNextAsOptional is the op that
# pulls from the iterator when the Optional API is used (the OptionalGetValue
# that follows is plumbing and, with control flow v2, lives inside an If body).
ITERATOR_INPUT_TYPES = frozenset({
    "IteratorGetNext",
    "IteratorGetNextSync",
    "IteratorGetNextAsOptional",
    "MultiDeviceIteratorGetNextFromShard",
    "QueueDequeue",
    "QueueDequeueV2",
    "QueueDequeueMany",
    "QueueDequeueManyV2",
    "QueueDequeueUpTo",
    "QueueDequeueUpToV2",
    "GetNext",            # Ascend GE's own data node, for graphs dumped from npu_bridge
    "DynamicGetNextV2",
})
# Placeholders count as data inputs only for feed_dict pipelines (see data_inputs).
# PlaceholderWithDefault is excluded on purpose: it is how Keras' learning phase
# and other optional flags are built, not how batches are fed.
PLACEHOLDER_TYPES = frozenset({"Placeholder", "PlaceholderV2"})

# --- plumbing ----------------------------------------------------------------
# Ops that forward a tensor (or a view/cast of it) without real compute. The FP
# walk passes through them; bp resolution walks back through them.
PLUMBING_TYPES = frozenset({
    "Identity", "IdentityN", "RefIdentity", "Snapshot", "StopGradient", "PreventGradient",
    "Cast", "Bitcast", "Reshape", "ExpandDims", "Squeeze", "Transpose", "EnsureShape",
    "CheckNumerics", "CheckNumericsV2", "DebugIdentity", "DebugIdentityV2",
    "ReadVariableOp", "Const", "HostConst", "PlaceholderWithDefault",
    # control flow v1
    "Switch", "RefSwitch", "Merge", "RefMerge", "Enter", "RefEnter", "Exit", "RefExit",
    "NextIteration", "RefNextIteration", "LoopCond", "ControlTrigger", "NoOp",
    # Optional API
    "OptionalGetValue", "OptionalFromValue",
})
# Ops whose output is metadata about a tensor, not its values: the FP walk does
# not continue through them (a StridedSlice of a Shape is not "compute on data").
METADATA_TYPES = frozenset({"Shape", "ShapeN", "Size", "Rank", "VariableShape", "OptionalHasValue"})

# Plumbing ops whose output k forwards input k (IdentityN) or input 0 (the rest).
PASS_THROUGH_SAME_PORT = frozenset({"IdentityN"})
PASS_THROUGH_INPUT0 = frozenset({
    "Identity", "RefIdentity", "Snapshot", "StopGradient", "PreventGradient", "Cast", "Bitcast",
    "Reshape", "ExpandDims", "Squeeze", "Transpose", "EnsureShape", "CheckNumerics", "CheckNumericsV2",
    "DebugIdentity", "DebugIdentityV2", "Switch", "RefSwitch", "Enter", "RefEnter", "Exit",
    "RefExit", "NextIteration", "RefNextIteration",
})

MERGE_TYPES = frozenset({"Merge", "RefMerge"})
# Which input of a conditional op is its predicate / branch index.
PREDICATE_INPUT = {"Switch": 1, "RefSwitch": 1, "If": 0, "StatelessIf": 0, "Case": 0, "StatelessCase": 0}
BACK_EDGE_TYPES = frozenset({"NextIteration", "RefNextIteration"})

VARIABLE_TYPES = frozenset({"VariableV2", "Variable", "VarHandleOp", "_VarHandlesOp"})
# How a forward op reads a weight (a resource variable's value, a v1 variable's read Identity).
WEIGHT_READ_TYPES = frozenset({"ReadVariableOp"}) | VARIABLE_TYPES


def is_random_type(op_type: str) -> bool:
    """Random-number ops (tf.random.*, stateless and stateful): a generator's noise comes from one."""
    return "Random" in op_type or op_type in ("TruncatedNormal", "StatefulStandardNormalV2", "StatefulUniform",
                                              "StatefulUniformInt", "StatefulTruncatedNormal")


def is_dataset_type(op_type: str) -> bool:
    """tf.data graph ops (datasets, iterators, their handles): plumbing for FP."""
    return (
        "Dataset" in op_type
        or op_type.startswith(("Iterator", "AnonymousIterator", "MultiDeviceIterator", "OneShotIterator"))
        or op_type in ("MakeIterator", "DeleteIterator")
    ) and op_type not in ITERATOR_INPUT_TYPES


def is_plumbing_type(op_type: str) -> bool:
    return op_type in PLUMBING_TYPES or is_dataset_type(op_type)


def is_compute_type(op_type: str) -> bool:
    """A "real compute" op: what fp/bp may be. Functional control flow v2
    (While/If/PartitionedCall...) counts as compute at the outer level."""
    return not (
        is_plumbing_type(op_type)
        or op_type in METADATA_TYPES
        or op_type in VARIABLE_TYPES
        or op_type in ITERATOR_INPUT_TYPES
        or op_type in PLACEHOLDER_TYPES
    )


def compute_flags(op_types: Sequence[str]) -> list[bool]:
    """``is_compute_type`` of every op, asked once per distinct type (a big
    graph has 100k ops but a few hundred types)."""
    flag = {t: is_compute_type(t) for t in set(op_types)}
    return [flag[t] for t in op_types]


# --- optimizer updates -------------------------------------------------------
_APPLY_PREFIXES = ("Apply", "ResourceApply", "SparseApply", "ResourceSparseApply")
# Assign-like ops also initialise variables and update batch-norm statistics,
# so they count as optimizer updates only when fed by the backward pass.
ASSIGN_TYPES = frozenset({
    "Assign", "AssignAdd", "AssignSub",
    "AssignVariableOp", "AssignAddVariableOp", "AssignSubVariableOp",
    "ScatterUpdate", "ScatterAdd", "ScatterSub", "ScatterMul", "ScatterDiv",
    "ScatterNdUpdate", "ScatterNdAdd", "ScatterNdSub",
    "ResourceScatterUpdate", "ResourceScatterAdd", "ResourceScatterSub",
    "ResourceScatterMul", "ResourceScatterDiv",
    "ResourceScatterNdUpdate", "ResourceScatterNdAdd", "ResourceScatterNdSub",
    "StridedSliceAssign", "ResourceStridedSliceAssign",
})


def is_apply_type(op_type: str) -> bool:
    """Optimizer kernels (ApplyAdam, ResourceApplyMomentum, ...): always updates."""
    return op_type.startswith(_APPLY_PREFIXES)


# --- communication ------------------------------------------------------------
ALL_REDUCE_TYPES = frozenset({
    "CollectiveReduce", "CollectiveReduceV2", "CollectiveReduceV3", "CollectiveReduceScatterV2",
    "NcclAllReduce", "NcclReduce", "HorovodAllreduce", "HorovodGroupedAllreduce",
    "HcomAllReduce", "HcomReduceScatter", "HcomReduce",
})
GATHER_TYPES = frozenset({
    "CollectiveGather", "CollectiveGatherV2", "HorovodAllgather", "HorovodGroupedAllgather",
    "HcomAllGather",
})
ALL_TO_ALL_TYPES = frozenset({
    "CollectiveAllToAllV2", "CollectiveAllToAllV3", "HorovodAlltoall", "HcomAllToAllV", "HcomAllToAll",
})
COLLECTIVE_TYPES = ALL_REDUCE_TYPES | GATHER_TYPES | ALL_TO_ALL_TYPES


def collective_kind(op_type: str) -> str:
    if op_type in GATHER_TYPES:
        return "gather"
    if op_type in ALL_TO_ALL_TYPES:
        return "all-to-all"
    return "all-reduce"


# --- names ----------------------------------------------------------------------
# tf.gradients scopes ("gradients/", "gradients_1/", "training/Adam/gradients/"),
# GradientTape ("gradient_tape/"), and the per-op "<op>_grad/" scope both of them
# create, which also catches tf.gradients(..., name="my_grads").
GRADIENT_NAME_RE = re.compile(r"(?:^|/)(?:gradients(?:_\d+)?|gradient_tape)/|_grad/")

TRAIN_OP_NAME_RE = re.compile(r"(?:^|/)(?:train|train_op|[^/]*_train_op|group_deps)$")


def is_gradient_name(name: str) -> bool:
    return GRADIENT_NAME_RE.search(name) is not None
