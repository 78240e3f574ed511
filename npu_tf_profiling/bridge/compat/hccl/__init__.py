"""`hccl` served by npu_tf_profiling: hccl.manage.api (ranks, groups) and hccl.split.api (gradient split)."""
