"""`npu_device.compat.v1`: the TF1 adapter's names for TF2-installed scripts (`from npu_device.compat.v1.npu_init import *`)."""
