"""`hccl.manage.api`: rank queries (RANK_ID/RANK_SIZE, else TF_CONFIG) and groups (only the world group exists)."""
from npu_tf_profiling.bridge.ranks.discovery import get_local_rank_id, get_local_rank_size, get_rank_id, get_rank_size
from npu_tf_profiling.bridge.ranks.groups import create_group, destroy_group

__all__ = ["get_rank_size", "get_rank_id", "get_local_rank_id", "get_local_rank_size", "create_group", "destroy_group"]
