"""`hccl.split`: gradient split strategies (api)."""
