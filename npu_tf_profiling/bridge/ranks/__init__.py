"""Several ranks as one job: how a rank finds its peers, how its sessions and eager context join them, and the collectives.

Ascend scripts reach their peers through HCCL; here the peers are TensorFlow
servers and the collectives are TensorFlow's own (the ones
MultiWorkerMirroredStrategy uses). Both surfaces use this room: the TF1
`hccl_ops` and distributed optimizers, and the TF2 `npu_device.distribute`.
With one rank (`RANK_SIZE` unset or 1) every name here is the identity.
See docs/multi_rank.md.
"""
