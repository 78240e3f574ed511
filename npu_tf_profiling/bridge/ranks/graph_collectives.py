"""`npu_bridge.hccl.hccl_ops` on TensorFlow's own collective ops, the ones MultiWorkerMirroredStrategy uses.

Upstream these are HCCL kernels (`HcomAllReduce`, ...). Here they are
`CollectiveReduceV2`, `CollectiveGatherV2` and `CollectiveBcastSendV2`/`RecvV2`
over the ranks' TensorFlow servers (how sessions join the job:
`bridge.ranks.session_join`), so the step trace's Reduce columns and `npu-tf-prof
cluster` see them like any other all-reduce. Signatures and defaults are
upstream's; with one rank (`RANK_SIZE` unset or 1) each returns its input.

What differs from HCCL, each for a reason:

* `fusion`/`fusion_id` are accepted and change nothing: each call is already one
  collective, and the lists `broadcast` and `NPUDistributedOptimizer` hand over
  are packed into one collective per dtype, which is what HCCL's fusion is for.
* Every collective waits at most HCCL_EXEC_TIMEOUT seconds for the other ranks
  (CANN's variable; default 1836 s), then fails instead of hanging.
* The collective ops carry float16/32/64 and int32/64; bfloat16 travels as
  float32 and bool and 8/16-bit integers as int32, then are cast back (exact for
  every operation except sums/products that leave the narrow type's range).
* Only the world group `hccl_world_group` exists. No gradient is registered
  (upstream registers one for `allreduce` only).

Ranks build their collectives in the same order (the same script), and each
collective takes the next instance key of a process-wide counter, so the n-th
collective of every rank meets the n-th of the others.
"""
from __future__ import annotations

import itertools
import threading
from typing import Any, Sequence

import tensorflow as tf

from npu_tf_profiling.bridge.ranks import session_join
from npu_tf_profiling.bridge.ranks.discovery import (
    WORLD_GROUP,
    RankSetup,
    check_group,
    exec_timeout_s,
    multi_rank_requested,
    rank_setup,
)

WORLD_GROUP_KEY = 0x4843434C
"""TensorFlow's group key of `hccl_world_group` ("HCCL" in ASCII): the same number on every rank."""
FIRST_INSTANCE_KEY = 1 << 20
"""Instance keys start above the small numbers TensorFlow's strategies count from."""

REDUCTIONS = {"sum": "Add", "max": "Max", "min": "Min", "prod": "Mul"}
"""Upstream's `reduction` names -> CollectiveReduceV2's merge_op."""

_WIRE_DTYPES = {
    tf.bfloat16: tf.float32,
    tf.bool: tf.int32, tf.int8: tf.int32, tf.uint8: tf.int32, tf.int16: tf.int32, tf.uint16: tf.int32,
}
_CARRIED = frozenset({tf.float16, tf.float32, tf.float64, tf.int32, tf.int64})

session_join.install()  # every collective needs sessions that reach the other ranks

_keys_lock = threading.Lock()
_instance_keys = itertools.count(FIRST_INSTANCE_KEY)


def allreduce(tensor: Any, reduction: str, fusion: int = 1, fusion_id: int = -1, group: str = WORLD_GROUP) -> tf.Tensor:
    """`tensor` reduced over all ranks with `reduction` (sum, max, min or prod); the same value on every rank."""
    merge_op = _merge_op(reduction)
    setup = collective_setup(group)
    if setup is None:
        return tensor
    with tf.name_scope("hccl_allreduce"):
        (reduced,) = reduce_packed([tf.convert_to_tensor(tensor)], merge_op, "Id", setup)
    return reduced


def allgather(tensor: Any, rank_size: int, group: str = WORLD_GROUP) -> tf.Tensor:
    """Every rank's `tensor` concatenated along axis 0 in rank order (shape [rank_size * d0, ...]).

    Scalars are gathered as shape [1], so the result has shape [rank_size].
    """
    setup = collective_setup(group)
    _check_rank_size(rank_size, setup)
    if setup is None:
        return tensor
    with tf.name_scope("hccl_allgather"):
        value = tf.convert_to_tensor(tensor)
        if value.shape.rank == 0:
            value = tf.reshape(value, [1])
        wire = _to_wire(value)
        gathered = tf.raw_ops.CollectiveGatherV2(
            input=wire, group_size=setup.rank_size, group_key=WORLD_GROUP_KEY, instance_key=next_instance_key(),
            ordering_token=[], communication_hint="auto", timeout_seconds=exec_timeout_s(),
        )
        order = gather_order(setup)
        if order != list(range(setup.rank_size)):
            chunks = tf.split(gathered, setup.rank_size, axis=0)
            gathered = tf.concat([chunks[position] for position in order], axis=0)
        return tf.cast(gathered, value.dtype) if wire.dtype != value.dtype else gathered


def broadcast(tensor: Any, root_rank: int, fusion: int = 2, fusion_id: int = 0, group: str = WORLD_GROUP) -> Any:
    """Rank `root_rank`'s values of `tensor` (a list of tensors, as upstream, or one tensor) on every rank.

    Returns a list for a list (upstream's form: `broadcast(tensor=[var], root_rank=0)[0]`), a tensor for a tensor.
    """
    setup = collective_setup(group)
    tensors = list(tensor) if isinstance(tensor, (list, tuple)) else [tensor]
    if setup is not None and not 0 <= root_rank < setup.rank_size:
        raise ValueError(f"broadcast: root_rank={root_rank!r} is not a rank of this job (0..{setup.rank_size - 1})")
    if setup is None:
        return tensors if isinstance(tensor, (list, tuple)) else tensor
    with tf.name_scope("hccl_broadcast"):
        values = broadcast_packed([tf.convert_to_tensor(t) for t in tensors], root_rank, setup)
    return values if isinstance(tensor, (list, tuple)) else values[0]


def reduce_scatter(tensor: Any, reduction: str, rank_size: int, group: str = WORLD_GROUP) -> tf.Tensor:
    """This rank's share of the reduced `tensor`: its axis-0 slice `rank_id` of `rank_size` equal slices."""
    merge_op = _merge_op(reduction)
    setup = collective_setup(group)
    _check_rank_size(rank_size, setup)
    if setup is None:
        return tensor
    with tf.name_scope("hccl_reduce_scatter"):
        (reduced,) = reduce_packed([tf.convert_to_tensor(tensor)], merge_op, "Id", setup)
        return tf.split(reduced, setup.rank_size, axis=0)[setup.rank_id]


# ----------------------------------------------------------------------------- building blocks
def collective_setup(group: str = WORLD_GROUP) -> RankSetup | None:
    """The rank set-up when collectives cross processes (RANK_SIZE > 1), else None (single rank: identity)."""
    check_group(group)
    return rank_setup() if multi_rank_requested() else None


def next_instance_key() -> int:
    with _keys_lock:
        return next(_instance_keys)


def reduce_packed(tensors: Sequence[tf.Tensor], merge_op: str, final_op: str, setup: RankSetup) -> list[tf.Tensor]:
    """Each tensor reduced over the ranks, with one CollectiveReduceV2 per dtype (final_op "Div" averages)."""

    def collective(packed: tf.Tensor) -> tf.Tensor:
        return tf.raw_ops.CollectiveReduceV2(
            input=packed, group_size=setup.rank_size, group_key=WORLD_GROUP_KEY, instance_key=next_instance_key(),
            ordering_token=[], merge_op=merge_op, final_op=final_op, communication_hint="auto",
            timeout_seconds=exec_timeout_s(),
        )

    return _per_dtype_packs(tensors, collective)


def broadcast_packed(tensors: Sequence[tf.Tensor], root_rank: int, setup: RankSetup) -> list[tf.Tensor]:
    """The root's values of each tensor, with one broadcast per dtype (the root sends, the others receive)."""

    def collective(packed: tf.Tensor) -> tf.Tensor:
        common = dict(group_size=setup.rank_size, group_key=WORLD_GROUP_KEY, instance_key=next_instance_key(),
                      communication_hint="auto", timeout_seconds=exec_timeout_s())
        if setup.rank_id == root_rank:
            return tf.raw_ops.CollectiveBcastSendV2(input=packed, **common)
        shape = packed.shape.as_list() if packed.shape.is_fully_defined() else tf.shape(packed)
        return tf.raw_ops.CollectiveBcastRecvV2(shape=shape, T=packed.dtype, **common)

    return _per_dtype_packs(tensors, collective)


def gather_order(setup: RankSetup) -> list[int]:
    """For each rank, the position of its chunk in CollectiveGatherV2's output.

    TensorFlow orders a group's members by their task names as strings, so
    `/job:worker/replica:0/task:10` comes before `task:2`; chief tasks come before
    workers, as in the rank order.
    """
    by_name = sorted(range(setup.rank_size), key=lambda rank: setup.peers[rank].task_name) if setup.peers else None
    if by_name is None:
        return list(range(setup.rank_size))
    return [by_name.index(rank) for rank in range(setup.rank_size)]


def _per_dtype_packs(tensors: Sequence[tf.Tensor], collective: Any) -> list[tf.Tensor]:
    """Flatten and concatenate the tensors of each wire dtype, run `collective` once per pack, unpack."""
    wires = [_to_wire(t) for t in tensors]
    results: list[tf.Tensor | None] = [None] * len(tensors)
    for dtype in dict.fromkeys(w.dtype for w in wires):  # first-appearance order, the same on every rank
        members = [i for i, w in enumerate(wires) if w.dtype == dtype]
        flat = [tf.reshape(wires[i], [-1]) for i in members]
        packed = collective(flat[0] if len(flat) == 1 else tf.concat(flat, axis=0))
        sizes = [_num_elements(wires[i]) for i in members]
        pieces = [packed] if len(members) == 1 else tf.split(packed, sizes, num=len(members))
        for i, piece in zip(members, pieces):
            shape = tensors[i].shape
            value = tf.reshape(piece, shape.as_list() if shape.is_fully_defined() else tf.shape(tensors[i]))
            value = tf.cast(value, tensors[i].dtype) if value.dtype != tensors[i].dtype else value
            value.set_shape(shape)
            results[i] = value
    return results  # type: ignore[return-value]


def can_carry(dtype: tf.DType) -> bool:
    """Whether a collective here can carry values of `dtype` (numbers and bools)."""
    return dtype.base_dtype in _CARRIED or dtype.base_dtype in _WIRE_DTYPES


def _to_wire(value: tf.Tensor) -> tf.Tensor:
    if value.dtype.base_dtype in _CARRIED:
        return value
    wire = _WIRE_DTYPES.get(value.dtype.base_dtype)
    if wire is None:
        raise TypeError(
            f"HCCL collectives here carry numbers and bools; got {value.dtype.name} ({value.name})"
        )
    return tf.cast(value, wire)


def _num_elements(value: tf.Tensor) -> Any:
    count = value.shape.num_elements()
    return count if count is not None else tf.size(value)


def _merge_op(reduction: str) -> str:
    if reduction not in REDUCTIONS:
        raise ValueError(f"reduction={reduction!r}: expected one of {', '.join(REDUCTIONS)}")
    return REDUCTIONS[reduction]


def _check_rank_size(rank_size: int, setup: RankSetup | None) -> None:
    expected = setup.rank_size if setup is not None else 1
    if rank_size != expected:
        raise ValueError(f"rank_size={rank_size!r} but this job has {expected} rank(s) (RANK_SIZE)")
