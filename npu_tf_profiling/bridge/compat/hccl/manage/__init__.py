"""`hccl.manage`: rank and group queries (api)."""
