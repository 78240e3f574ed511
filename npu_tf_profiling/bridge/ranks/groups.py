"""`hccl.manage.api` groups and `hccl.split.api` gradient-split strategies.

Upstream, `set_split_strategy_by_idx/size` choose where HCCL cuts the gradient
list into fused all-reduce segments (a performance knob with no effect on the
values), and `create_group` makes a sub-communicator. Here gradients are
all-reduced in packs of their own (`data_parallel`), so the split is accepted and
noted once: the all-reduced values are the same, only the fusion differs. Only
the world group of all ranks exists: `create_group` is accepted and noted, and
a collective or rank query naming another group raises a clear error (`discovery`).
"""
from __future__ import annotations

from typing import Sequence

from npu_tf_profiling.bridge.notes import accepted_no_op
from npu_tf_profiling.bridge.ranks.discovery import WORLD_GROUP
_SPLIT = "HCCL gradient-fusion split points have no CPU/GPU meaning; all-reduced values are unchanged"
_GROUP = "HCCL sub-groups are not created on CPU/GPU; only hccl_world_group (all ranks) can be used"


@accepted_no_op("set_split_strategy_by_idx", _SPLIT)
def set_split_strategy_by_idx(idxList: Sequence[int], group: str = WORLD_GROUP) -> None:
    """Accepted; see the module docstring."""


@accepted_no_op("set_split_strategy_by_size", _SPLIT)
def set_split_strategy_by_size(dataSizeList: Sequence[int], group: str = WORLD_GROUP) -> None:
    """Accepted; see the module docstring."""


@accepted_no_op("create_group", _GROUP)
def create_group(group: str, rank_num: int, rank_ids: Sequence[int]) -> None:
    """Accepted; see the module docstring."""


@accepted_no_op("destroy_group", _GROUP)
def destroy_group(group: str) -> None:
    """Accepted; see the module docstring."""
