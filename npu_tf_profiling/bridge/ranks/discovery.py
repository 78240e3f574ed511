"""Rank set-up of a multi-rank Ascend script on CPU/GPU hosts, and the rank helpers.

Ascend scripts learn their place in the job from `RANK_ID` and `RANK_SIZE` and
reach their peers through HCCL. Here the peers are TensorFlow servers, found as
`MultiWorkerMirroredStrategy` finds them:

* `TF_CONFIG` (its `cluster` and `task`): the training tasks in rank order,
  chief (or master) first, then the workers, the order the profiling device ids use;
* else the Ascend `RANK_TABLE_FILE` (version 1.0 JSON): each `server_list[i].device[j]`
  is the rank `rank_id`, served at `server_id:(HCCL_IF_BASE_PORT + device_id)`,
  `HCCL_IF_BASE_PORT` defaulting to 60000 as on Ascend, where HCCL also takes its
  ports from there. `RANK_ID` says which entry this process is.

Collectives are switched on, as upstream, by `RANK_SIZE` > 1. Values that
contradict each other (`RANK_ID` 1 but `TF_CONFIG` task 0, `RANK_SIZE` 3 but two
tasks listed) raise `RankSetupError` naming both sources, when a session is
created or a collective is built, so before the first step. Everything here is
read from the environment on each call, so a script that sets the variables
itself before building its graph is seen as it expects. How sessions join the
job is `session_join`'s concern; see docs/multi_rank.md.
"""
from __future__ import annotations

import contextlib
import json
import os
from dataclasses import dataclass
from typing import Any, Iterator, Mapping

from npu_tf_profiling.runtime.device import TASK_TYPES_IN_RANK_ORDER

WORLD_GROUP = "hccl_world_group"
"""The only HCCL group: every rank of the job."""

DEFAULT_BASE_PORT = 60000
DEFAULT_CONNECT_TIMEOUT_S = 120.0
DEFAULT_EXEC_TIMEOUT_S = 1836.0
"""CANN's defaults for HCCL_IF_BASE_PORT, HCCL_CONNECT_TIMEOUT and HCCL_EXEC_TIMEOUT."""


class RankSetupError(ValueError):
    """The rank environment is incomplete or contradicts itself; raised before the first step."""


@dataclass(frozen=True)
class Peer:
    """One rank's TensorFlow server: its task in the cluster and its host:port."""

    rank: int
    job: str
    task: int
    address: str

    @property
    def host(self) -> str:
        return self.address.rsplit(":", 1)[0]

    @property
    def task_name(self) -> str:
        return f"/job:{self.job}/replica:0/task:{self.task}"


@dataclass(frozen=True)
class RankSetup:
    """Where this process stands in the job: its rank, the rank count and, when known, every rank's server.

    `multi_rank` is True when `RANK_SIZE` > 1: collectives then reduce across
    processes, and sessions join the job (they need `peers`). A job described by
    `TF_CONFIG` alone (a MultiWorkerMirroredStrategy job) reports its ranks but is
    left to its strategy.
    """

    rank_id: int
    rank_size: int
    peers: tuple[Peer, ...]
    source: str
    multi_rank: bool

    @property
    def me(self) -> Peer:
        return self.peers[self.rank_id]

    @property
    def local_rank_id(self) -> int:
        """This rank's index among the ranks on its host (HCCL's local rank)."""
        if not self.peers:
            return 0
        return sum(1 for p in self.peers[: self.rank_id] if p.host == self.me.host)

    @property
    def local_rank_size(self) -> int:
        if not self.peers:
            return 1
        return sum(1 for p in self.peers if p.host == self.me.host)

    def cluster(self) -> dict[str, list[str]]:
        """The cluster as `tf.train.ClusterSpec` takes it: job -> addresses by task index."""
        jobs: dict[str, list[str]] = {}
        for peer in sorted(self.peers, key=lambda p: (p.job, p.task)):
            jobs.setdefault(peer.job, []).append(peer.address)
        return jobs

    def require_peers(self) -> tuple[Peer, ...]:
        if not self.peers:
            raise RankSetupError(
                f"RANK_SIZE={self.rank_size} but no rank's address is known: set TF_CONFIG "
                '(e.g. {"cluster":{"worker":["host1:2222","host2:2222"]},"task":{"type":"worker","index":0}}) '
                "or RANK_TABLE_FILE (see docs/multi_rank.md)"
            )
        return self.peers


def rank_setup(environ: Mapping[str, str] | None = None) -> RankSetup:
    """The rank set-up described by the environment; raises RankSetupError when it contradicts itself."""
    environ = os.environ if environ is None else environ
    rank_size_env = _non_negative_int(environ, "RANK_SIZE")
    rank_id_env = _non_negative_int(environ, "RANK_ID")
    if rank_size_env == 0:
        raise RankSetupError("RANK_SIZE=0: a job has at least one rank")

    tf_config = environ.get("TF_CONFIG", "").strip()
    table_path = environ.get("RANK_TABLE_FILE", "").strip()
    if tf_config and _has_cluster(tf_config):
        peers, own_rank = _peers_from_tf_config(tf_config)
        source = "TF_CONFIG"
    elif table_path:
        peers, own_rank = _peers_from_rank_table(table_path, _base_port(environ)), None
        source = f"RANK_TABLE_FILE={table_path}"
        if rank_id_env is None:
            raise RankSetupError(f"{source}: RANK_ID must say which rank of the table this process is")
    else:
        peers, own_rank, source = (), None, "RANK_ID/RANK_SIZE"

    if peers and rank_size_env is not None and rank_size_env != len(peers):
        raise RankSetupError(f"RANK_SIZE={rank_size_env} but {source} lists {len(peers)} training rank(s)")
    if own_rank is not None and rank_id_env is not None and own_rank != rank_id_env:
        raise RankSetupError(f"RANK_ID={rank_id_env} but TF_CONFIG's task is rank {own_rank} (chief first, then workers)")
    rank_size = rank_size_env if rank_size_env is not None else (len(peers) or 1)
    rank_id = rank_id_env if rank_id_env is not None else (own_rank or 0)
    if rank_id >= rank_size:
        raise RankSetupError(f"RANK_ID={rank_id} is not below RANK_SIZE={rank_size} ({source})")
    multi_rank = multi_rank_requested(environ)
    if multi_rank and peers and own_rank is None and source == "TF_CONFIG":
        raise RankSetupError("RANK_SIZE > 1 but TF_CONFIG's task is not a training task (chief, master or worker)")
    return RankSetup(rank_id, rank_size, peers, source, multi_rank)


def multi_rank_requested(environ: Mapping[str, str] | None = None) -> bool:
    """RANK_SIZE > 1: the only switch, read alone so that single-rank processes never parse the rest."""
    rank_size = _non_negative_int(os.environ if environ is None else environ, "RANK_SIZE")
    return rank_size is not None and rank_size > 1


def connect_timeout_s(environ: Mapping[str, str] | None = None) -> float:
    """How long a rank waits for every other rank's server before the first step (HCCL_CONNECT_TIMEOUT)."""
    return _positive_seconds(os.environ if environ is None else environ, "HCCL_CONNECT_TIMEOUT", DEFAULT_CONNECT_TIMEOUT_S)


def exec_timeout_s(environ: Mapping[str, str] | None = None) -> float:
    """How long one collective may wait for the other ranks before it fails (HCCL_EXEC_TIMEOUT)."""
    return _positive_seconds(os.environ if environ is None else environ, "HCCL_EXEC_TIMEOUT", DEFAULT_EXEC_TIMEOUT_S)


@contextlib.contextmanager
def tf_config_hidden_from_run_config() -> Iterator[None]:
    """While an Estimator `RunConfig` is built: TF_CONFIG without its `cluster` and `task`, when RANK_SIZE > 1.

    RunConfig reads a TF_CONFIG cluster as parameter-server training: it refuses a
    cluster of workers alone, points the session at the task's own address and makes
    every rank but the chief wait for a chief to initialise variables it never
    shares. An Ascend rank is its own chief, as upstream: it initialises its own
    variables (the broadcast hook then copies rank 0's) and its sessions join the
    job through `session_join`. So RunConfig must see a one-process job; the other
    TF_CONFIG keys (model_dir, ...) stay visible, and TF_CONFIG is restored after.
    """
    original = os.environ.get("TF_CONFIG")
    if original is None or not multi_rank_requested() or not _has_cluster(original):
        yield
        return
    rest = {k: v for k, v in json.loads(original).items() if k not in ("cluster", "task")}
    os.environ["TF_CONFIG"] = json.dumps(rest)
    try:
        yield
    finally:
        os.environ["TF_CONFIG"] = original


# ----------------------------------------------------------------------------- the helpers scripts call
def check_group(group: str) -> None:
    if group != WORLD_GROUP:
        raise ValueError(
            f"HCCL group {group!r}: only {WORLD_GROUP!r} (all ranks) exists on CPU/GPU TensorFlow; "
            "sub-groups are not created here"
        )


def get_rank_id(group: str = WORLD_GROUP) -> int:
    """This process's rank: RANK_ID, else its TF_CONFIG task (chief first, then workers), else 0."""
    check_group(group)
    return rank_setup().rank_id


def get_rank_size(group: str = WORLD_GROUP) -> int:
    """The number of ranks: RANK_SIZE, else the TF_CONFIG cluster's training tasks, else 1."""
    check_group(group)
    return rank_setup().rank_size


def get_local_rank_id(group: str = WORLD_GROUP) -> int:
    """This rank's index among the ranks on its host (from the peers' addresses; 0 when they are unknown)."""
    check_group(group)
    return rank_setup().local_rank_id


def get_local_rank_size(group: str = WORLD_GROUP) -> int:
    """The number of ranks on this host (1 when the peers are unknown)."""
    check_group(group)
    return rank_setup().local_rank_size


def get_npu_rank_id() -> int:
    return get_rank_id()


def get_npu_local_rank_id() -> int:
    return get_local_rank_id()


def get_npu_rank_size() -> int:
    return get_rank_size()


def get_npu_local_rank_size() -> int:
    return get_local_rank_size()


# ----------------------------------------------------------------------------- parsing
def _non_negative_int(environ: Mapping[str, str], name: str) -> int | None:
    value = environ.get(name, "").strip()
    if not value:
        return None
    if not value.isdigit():
        raise RankSetupError(f"{name}={value!r}: expected a non-negative integer")
    return int(value)


def _positive_seconds(environ: Mapping[str, str], name: str, default: float) -> float:
    value = environ.get(name, "").strip()
    if not value:
        return default
    try:
        seconds = float(value)
    except ValueError:
        seconds = -1.0
    if not seconds > 0:
        raise RankSetupError(f"{name}={value!r}: expected a positive number of seconds")
    return seconds


def _base_port(environ: Mapping[str, str]) -> int:
    value = _non_negative_int(environ, "HCCL_IF_BASE_PORT")
    if value is None:
        return DEFAULT_BASE_PORT
    if not 1024 <= value <= 65520:
        raise RankSetupError(f"HCCL_IF_BASE_PORT={value}: expected a port in [1024, 65520]")
    return value


def _has_cluster(tf_config: str) -> bool:
    try:
        parsed = json.loads(tf_config)
    except ValueError as exc:
        raise RankSetupError(f"TF_CONFIG is not valid JSON ({exc})") from None
    return isinstance(parsed, dict) and bool(parsed.get("cluster"))


def _peers_from_tf_config(tf_config: str) -> tuple[tuple[Peer, ...], int | None]:
    """The training tasks in rank order, and this process's rank (None when its task does not train)."""
    parsed = json.loads(tf_config)
    cluster, task = parsed.get("cluster"), parsed.get("task") or {}
    if not isinstance(cluster, dict) or not isinstance(task, dict):
        raise RankSetupError('TF_CONFIG: "cluster" and "task" must be JSON objects')
    if cluster.get("ps"):
        raise RankSetupError("TF_CONFIG lists parameter servers (ps): multi-rank Ascend scripts reduce across ranks instead")
    peers: list[Peer] = []
    own_rank = None
    for job in TASK_TYPES_IN_RANK_ORDER:
        addresses = cluster.get(job) or []
        if isinstance(addresses, dict):  # the sparse form {"index": "host:port"}
            addresses = [addresses[k] for k in sorted(addresses, key=int)]
        for index, address in enumerate(addresses):
            if task.get("type") == job and str(task.get("index", 0)) == str(index):
                own_rank = len(peers)
            peers.append(Peer(len(peers), job, index, _address(address, f"TF_CONFIG cluster.{job}[{index}]")))
    return tuple(peers), own_rank


def _peers_from_rank_table(path: str, base_port: int) -> tuple[Peer, ...]:
    """The ranks of an Ascend rank table (version 1.0): server_id:(base_port + device_id), in rank_id order."""
    try:
        with open(path, encoding="utf-8") as handle:
            table = json.load(handle)
    except OSError as exc:
        raise RankSetupError(f"RANK_TABLE_FILE={path}: cannot read it ({exc.strerror})") from None
    except ValueError as exc:
        raise RankSetupError(f"RANK_TABLE_FILE={path}: not valid JSON ({exc})") from None
    by_rank: dict[int, str] = {}
    try:
        for server in table["server_list"]:
            host = str(server["server_id"])
            for device in server["device"]:
                rank, port = int(device["rank_id"]), base_port + int(device["device_id"])
                if rank in by_rank:
                    raise RankSetupError(f"RANK_TABLE_FILE={path}: rank_id {rank} appears twice")
                by_rank[rank] = f"{host}:{port}"
    except (KeyError, TypeError, ValueError) as exc:
        if isinstance(exc, RankSetupError):
            raise
        raise RankSetupError(
            f"RANK_TABLE_FILE={path}: expected server_list[].server_id and server_list[].device[] "
            f"with device_id and rank_id (rank table version 1.0); {type(exc).__name__}: {exc}"
        ) from None
    if sorted(by_rank) != list(range(len(by_rank))) or not by_rank:
        raise RankSetupError(f"RANK_TABLE_FILE={path}: rank_ids must be 0..N-1, got {sorted(by_rank)}")
    return tuple(Peer(rank, "worker", rank, by_rank[rank]) for rank in range(len(by_rank)))


def _address(value: Any, where: str) -> str:
    text = str(value)
    host, _, port = text.rpartition(":")
    if not host or not port.isdigit():
        raise RankSetupError(f"{where}={text!r}: expected host:port")
    return text
