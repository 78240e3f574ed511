"""`hccl.split.api`: gradient-fusion split strategies, accepted as no-ops."""
from npu_tf_profiling.bridge.ranks.groups import set_split_strategy_by_idx, set_split_strategy_by_size

__all__ = ["set_split_strategy_by_idx", "set_split_strategy_by_size"]
