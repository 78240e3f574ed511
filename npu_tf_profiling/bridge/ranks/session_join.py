"""Sessions join the multi-rank job by themselves: the collective bootstrap.

TensorFlow runs collectives across processes only in a distributed session: the
session's target is a TensorFlow server of the cluster, and its ConfigProto names
the collective group leader (this is what MultiWorkerMirroredStrategy sets up for
an Estimator: a `tf.distribute.Server` per task, started with a ConfigProto that
carries `experimental.collective_group_leader`, and sessions whose target is that
server and whose `device_filters` keep them to their own task). A local session
(target "") cannot reach another process at all.

So when `RANK_SIZE` > 1, creating a session with the default target, as a plain
`tf.compat.v1.Session(config=...)`, `MonitoredTrainingSession` or an Estimator
does, is redirected here: the first such session starts this process's server
(from TF_CONFIG or RANK_TABLE_FILE), waits until every rank's server answers
(at most HCCL_CONNECT_TIMEOUT seconds, then an error names the missing ranks),
and every such session gets `configure_session_for_ranks`' settings. Sessions
with an explicit target, and processes with one rank, are left exactly as they are.

Failures name the missing rank: a collective that fails because a peer is gone
(its own HCCL_EXEC_TIMEOUT, or a broken connection) is re-raised as
`RankFailureError` listing the ranks whose servers no longer answer. One wait in
TensorFlow has no timeout (a rank asking the group leader, rank 0, for step ids
of a graph it has not run before retries forever), so a watchdog ends the process
with that message when a run outlives HCCL_EXEC_TIMEOUT while a rank is gone.
Raw profiling data is written as each step ends, so it stays readable either way.
"""
from __future__ import annotations

import functools
import os
import socket
import sys
import threading
import time
from typing import Any, Callable

from npu_tf_profiling.bridge.ranks.discovery import (
    Peer,
    RankSetup,
    connect_timeout_s,
    exec_timeout_s,
    multi_rank_requested,
    rank_setup,
)
from npu_tf_profiling.exit_codes import EXIT_RANK_LOST
from npu_tf_profiling.runtime import tf_private
from npu_tf_profiling.runtime.session.base_session import SessionInit, wrap_session_init

PROBE_TIMEOUT_S = 2.0
WATCHDOG_GRACE_S = 10.0
"""A run may outlive HCCL_EXEC_TIMEOUT by this much (the collective's own timeout fires first) before the watchdog acts."""


class RankFailureError(RuntimeError):
    """Another rank never came up or is gone; this rank cannot go on."""


def configure_session_for_ranks(config_proto: Any = None) -> Any:
    """The ConfigProto (changed in place, or a new one) with what a multi-rank session needs.

    * `experimental.collective_group_leader`: rank 0's task, which groups the ranks;
    * `device_filters`: this rank's own task only, so creating a session never waits
      for other ranks (MultiWorkerMirroredStrategy does the same);
    * `isolate_session_state`: each session has its own variables, as a local
      session has, although the server outlives it.

    With one rank the config is returned unchanged. Calling it again changes nothing.
    """
    from tensorflow.core.protobuf import config_pb2

    config = config_proto if isinstance(config_proto, config_pb2.ConfigProto) else config_pb2.ConfigProto()
    if not multi_rank_requested():
        return config
    setup = rank_setup()
    peers = setup.require_peers()
    config.experimental.collective_group_leader = peers[0].task_name
    del config.device_filters[:]
    config.device_filters.append(f"/job:{setup.me.job}/task:{setup.me.task}")
    config.isolate_session_state = True
    return config


def install() -> None:
    """Redirect default-target sessions of multi-rank processes (idempotent; TensorFlow is not imported here)."""
    wrap_session_init("rank_job", _join_rank_job)


def unreachable_peers(setup: RankSetup) -> list[Peer]:
    """The other ranks whose server does not accept a connection now."""
    return [p for p in setup.peers if p.rank != setup.rank_id and not _answers(p)]


def describe(peers: list[Peer]) -> str:
    return ", ".join(f"rank {p.rank} ({p.address})" for p in peers)


# ----------------------------------------------------------------------------- the session init wrapper
def _join_rank_job(init: SessionInit, session: Any, target: str, graph: Any, config: Any) -> None:
    """A default-target session of a multi-rank process is made on this rank's server (module docstring)."""
    if target or not multi_rank_requested():
        init(session, target, graph, config)
        return
    from tensorflow.core.protobuf import config_pb2

    try:
        setup = rank_setup()  # a contradictory rank environment fails here, before any step
        session_config = config_pb2.ConfigProto()
        if config is not None:
            session_config.CopyFrom(config)  # the caller's config is not changed
        configure_session_for_ranks(session_config)
        server_target = _JOB.join(setup, session_config)
    except Exception:
        tf_private.no_session_made(session)
        raise
    init(session, server_target, graph, session_config)
    _watch_runs(session, setup)


class _Job:
    """This process's server and its one-time wait for the other ranks."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._server: Any = None
        self._setup: RankSetup | None = None

    def join(self, setup: RankSetup, session_config: Any) -> str:
        with self._lock:
            if self._server is None:
                self._server = _start_server(setup, session_config)
                self._setup = setup
                _wait_for_peers(setup, connect_timeout_s())
                _WATCHDOG.start(setup)
            elif setup != self._setup:
                raise RankFailureError(
                    f"the rank environment changed after this process joined the job as rank {self._setup.rank_id} "
                    f"of {self._setup.rank_size} ({self._setup.source}); a process joins one job"
                )
            return self._server.target


def _start_server(setup: RankSetup, session_config: Any) -> Any:
    """This rank's `tf.distribute.Server`, started with the first session's config (its devices, GPU options)."""
    import tensorflow as tf
    from tensorflow.core.protobuf import config_pb2

    server_config = config_pb2.ConfigProto()
    server_config.CopyFrom(session_config)
    del server_config.device_filters[:]  # the server serves every session of this process
    try:
        return tf.distribute.Server(
            tf.train.ClusterSpec(setup.cluster()), job_name=setup.me.job, task_index=setup.me.task,
            config=server_config, start=True,
        )
    except Exception as exc:
        raise RankFailureError(
            f"rank {setup.rank_id}: cannot start its TensorFlow server at {setup.me.address} ({setup.source}): {exc}"
        ) from exc


def _wait_for_peers(setup: RankSetup, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    waiting = [p for p in setup.peers if p.rank != setup.rank_id]
    while waiting:
        waiting = [p for p in waiting if not _answers(p)]
        if waiting and time.monotonic() > deadline:
            raise RankFailureError(
                f"{describe(waiting)} did not come up within HCCL_CONNECT_TIMEOUT={timeout_s:g} s: "
                f"never started, or died before its first session (this is rank {setup.rank_id} of "
                f"{setup.rank_size}, ranks from {setup.source})"
            )
        if waiting:
            time.sleep(0.2)


def _answers(peer: Peer) -> bool:
    host, port = peer.address.rsplit(":", 1)
    try:
        with socket.create_connection((host, int(port)), timeout=PROBE_TIMEOUT_S):
            return True
    except OSError:
        return False


# ----------------------------------------------------------------------------- failures
def _watch_runs(session: Any, setup: RankSetup) -> None:
    """Wrap this session's `run`: a rank failure is named, and the watchdog sees how long runs take."""
    from tensorflow import errors

    peer_errors = (errors.DeadlineExceededError, errors.UnavailableError, errors.AbortedError,
                   errors.CancelledError, errors.InternalError)
    inner = session.run

    @functools.wraps(inner)
    def run(*args: Any, **kwargs: Any) -> Any:
        token = _WATCHDOG.run_started()
        try:
            return inner(*args, **kwargs)
        except peer_errors as exc:
            failure = _rank_failure(exc, setup)
            if failure is None:
                raise
            raise failure from exc
        finally:
            _WATCHDOG.run_finished(token)

    session.run = run


def _rank_failure(exc: Exception, setup: RankSetup) -> RankFailureError | None:
    """A RankFailureError naming the lost ranks, or None when every rank still answers and no collective timed out."""
    from tensorflow import errors

    lost = unreachable_peers(setup)
    first_line = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    where = f"this is rank {setup.rank_id} of {setup.rank_size}, ranks from {setup.source}"
    if lost:
        return RankFailureError(f"{describe(lost)} is gone (died or was stopped); {where}. TensorFlow said: {first_line}")
    if isinstance(exc, errors.DeadlineExceededError):
        return RankFailureError(
            f"a collective waited longer than HCCL_EXEC_TIMEOUT={exec_timeout_s():g} s while every rank's server "
            f"still answers: a rank is stuck or much slower; {where}. TensorFlow said: {first_line}"
        )
    return None


class _Watchdog:
    """Ends the process when a run is stuck past HCCL_EXEC_TIMEOUT and a rank is gone."""

    def __init__(self, exit_process: Callable[[int], None] = os._exit, grace_s: float = WATCHDOG_GRACE_S) -> None:
        self._grace_s = grace_s
        self._lock = threading.Lock()
        self._runs: dict[int, float] = {}
        self._next_token = 0
        self._thread: threading.Thread | None = None
        self._stopped = threading.Event()
        self._exit = exit_process

    def start(self, setup: RankSetup) -> None:
        if self._thread is None:
            self._thread = threading.Thread(target=self._watch, args=(setup,), name="npu-tf-ranks-watchdog", daemon=True)
            self._thread.start()

    def stop(self) -> None:
        """Stop watching (the process is leaving the job)."""
        self._stopped.set()

    def run_started(self) -> int:
        with self._lock:
            self._next_token += 1
            self._runs[self._next_token] = time.monotonic()
            return self._next_token

    def run_finished(self, token: int) -> None:
        with self._lock:
            self._runs.pop(token, None)

    def _watch(self, setup: RankSetup) -> None:
        limit = exec_timeout_s() + self._grace_s
        while not self._stopped.wait(min(5.0, limit / 4)):
            with self._lock:
                oldest = min(self._runs.values(), default=None)
            if oldest is None or time.monotonic() - oldest < limit:
                continue
            lost = unreachable_peers(setup)
            if lost:
                print(
                    f"npu_tf_profiling: {describe(lost)} is gone and this rank ({setup.rank_id} of {setup.rank_size}) "
                    f"has waited {time.monotonic() - oldest:.0f} s in one step (HCCL_EXEC_TIMEOUT={exec_timeout_s():g} s) "
                    "in a wait TensorFlow never times out; ending the process",
                    file=sys.stderr, flush=True,
                )
                self._exit(EXIT_RANK_LOST)
                return


_JOB = _Job()
_WATCHDOG = _Watchdog()
