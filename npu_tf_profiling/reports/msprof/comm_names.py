"""How our all-reduce groups are named in the msprof layout (HCCL's naming).

msprof-analyze matches one collective across ranks by its **op name** within
its **group** (``slow_rank`` compares the durations of same-named ops, the
communication tables join on ``<op name>@<group>``), so every rank must give
the same all-reduce the same name. Ours: ``hcom_allReduce__<model>_<step>_<k>``
for the k-th all-reduce group (from 1) of iteration ``step`` of training graph
``model``: the graph's Model ID is the same on every worker of a job, and the
Iteration ID is the global step, so the name is the same on every rank.

Every all-reduce of a data-parallel job runs among all its workers, in HCCL's
default group, ``hccl_world_group``. msprof-analyze keys groups by a 64-bit
hash of the group's name (two 32-bit polynomial hashes, primes 29 and 131,
over the characters), written as a decimal string: ``group_hash`` computes it,
so our tables carry the same key torch_npu's do.
"""
from __future__ import annotations

import functools
from typing import Iterable

WORLD_GROUP = "hccl_world_group"
ALLREDUCE_OP_TYPE = "hcom_allReduce_"
ALLREDUCE_API = "HcclAllreduce"
COLLECTIVE = "collective"
P2P = "p2p"

_MASK32 = 0xFFFFFFFF


_OP_NAME = ALLREDUCE_OP_TYPE + "_{}_{}_{}"  # model, step, group


def op_name(model_id: int, step: int, group: int) -> str:
    """The HCCL-style name of all-reduce group ``group`` (from 1) of one iteration."""
    return _OP_NAME.format(model_id, step, group)


def op_names(model_id: Iterable[int], step: Iterable[int], group: Iterable[int]) -> list[str]:
    """``op_name`` of many all-reduces (thousands a rank in ``cluster --layouts``: formatted in one C loop)."""
    return list(map(_OP_NAME.format, model_id, step, group))


@functools.lru_cache(maxsize=64)
def group_hash(name: str) -> str:
    """msprof-analyze's key of a communication group: two 32-bit hashes side by side, as text.

    Cached: every all-reduce of a run names the same few groups.
    """
    low = high = 0
    for char in name:
        code = ord(char)
        high = (high * 29 + code) & _MASK32
        low = (low * 131 + code) & _MASK32
    return str((high << 32) | low)


def step_key(step: int) -> str:
    """The step key of communication.json / the analysis tables: ``step<N>``."""
    return f"step{step}"
