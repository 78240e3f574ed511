"""`npu_device.distribute`'s collectives across ranks, from eager TensorFlow 2 code: TensorFlow's own collective ops.

Upstream, `npu_device.open()` joins the HCCL job when `RANK_SIZE` > 1, and
`all_reduce`/`broadcast` are HCCL ops placed on the NPU. Here the ranks are
TensorFlow servers, found as the TF1 path finds them (`discovery.rank_setup`:
TF_CONFIG, or the Ascend RANK_TABLE_FILE), and `join` makes the process's
eager context collective-enabled the way MultiWorkerMirroredStrategy does: a
ServerDef of the cluster whose session config names rank 0 the group leader
and keeps this task to its own devices. From then on the process's ops run on
``/job:<job>/replica:0/task:<i>``, so `open()` must come before the model is
built (as it does in Ascend's scripts, and as upstream needs).

The ops are the V2 collectives (`CollectiveReduceV2`, `CollectiveBcastSendV2`/
`RecvV2`), one group of every rank. Each call takes the next instance key:
inside a `tf.function` that happens at trace time, so every call of the
function reuses its keys, and the ranks must trace and call in the same order,
which is what upstream asks of HCCL too. A peer that is gone ends a collective
after HCCL_EXEC_TIMEOUT (``discovery.exec_timeout_s``) with TensorFlow's error.
"""
from __future__ import annotations

import copy
import itertools
import threading
from dataclasses import dataclass, field
from typing import Any, Iterator

from npu_tf_profiling.bridge.ranks.discovery import RankSetup, exec_timeout_s
from npu_tf_profiling.runtime import tf_private

GROUP_KEY = 1  # hccl_world_group: every rank
MERGE_OPS = {"sum": "Add", "mean": "Add", "max": "Max", "min": "Min", "prod": "Mul"}


@dataclass
class EagerRanks:
    """This process in its collective-enabled eager context: where its ops run, and the next instance key."""

    setup: RankSetup
    device: str
    _keys: Iterator[int] = field(default_factory=lambda: itertools.count(1))

    @property
    def size(self) -> int:
        return self.setup.rank_size

    def all_reduce(self, tensor: Any, reduction: str) -> Any:
        """`tensor` reduced over the ranks ("mean": the sum divided by the rank count, as upstream)."""
        import tensorflow as tf

        with tf.device(self.device):
            reduced = tf.raw_ops.CollectiveReduceV2(
                input=tensor, group_size=self.size, group_key=GROUP_KEY, instance_key=next(self._keys), ordering_token=[],
                merge_op=MERGE_OPS[reduction], final_op="Id", timeout_seconds=exec_timeout_s(),
            )
            if reduction != "mean":
                return reduced
            if reduced.dtype.is_floating:
                return reduced * tf.cast(1.0 / self.size, reduced.dtype)
            return reduced // tf.cast(self.size, reduced.dtype)

    def broadcast(self, variable: Any, root_rank: int) -> None:
        """Give `variable` rank `root_rank`'s value on every rank."""
        import tensorflow as tf

        key = next(self._keys)
        with tf.device(self.device):
            if self.setup.rank_id == root_rank:
                tf.raw_ops.CollectiveBcastSendV2(input=tf.convert_to_tensor(variable), group_size=self.size,
                                                 group_key=GROUP_KEY, instance_key=key, timeout_seconds=exec_timeout_s())
            else:
                variable.assign(tf.raw_ops.CollectiveBcastRecvV2(
                    group_size=self.size, group_key=GROUP_KEY, instance_key=key, shape=variable.shape,
                    T=variable.dtype, timeout_seconds=exec_timeout_s()))


_lock = threading.Lock()
_joined: EagerRanks | None = None


def join(setup: RankSetup) -> EagerRanks:
    """Make this process's eager context one task of the job's cluster, with collectives on (once)."""
    global _joined
    with _lock:
        if _joined is None:
            import tensorflow as tf
            from tensorflow.core.protobuf import tensorflow_server_pb2

            peers = setup.require_peers()
            me = setup.me
            context = tf_private.eager_context()
            config = copy.deepcopy(context.config)
            config.experimental.collective_group_leader = peers[0].task_name
            del config.device_filters[:]
            config.device_filters.append(f"/job:{me.job}/task:{me.task}")
            server_def = tensorflow_server_pb2.ServerDef(
                cluster=tf.train.ClusterSpec(setup.cluster()).as_cluster_def(), default_session_config=config,
                job_name=me.job, task_index=me.task, protocol="grpc",
            )
            context.enable_collective_ops(server_def)
            _joined = EagerRanks(setup, f"{me.task_name}/device:CPU:0")
        return _joined


def joined() -> EagerRanks | None:
    """The ranks `join` joined, or None (one rank, or `open()` not called with RANK_SIZE > 1)."""
    return _joined
