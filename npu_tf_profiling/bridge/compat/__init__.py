"""Root of the module tree that `import npu_bridge...` and `import hccl...` resolve to.

`install_npu_bridge_alias()` (bridge/alias.py) appends this folder to the end of
`sys.path`, so its `npu_bridge` and `hccl` packages mirror upstream's module
paths (`npu_bridge.estimator.npu.npu_config`, `hccl.manage.api`, ...). Every
module here only re-exports names implemented elsewhere in the `bridge` room,
under upstream's module and attribute names. What each name does on CPU/GPU:
docs/npu_bridge_surface.md.
"""
