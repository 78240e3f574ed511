"""Where the cluster analysis' tasks run: Dask, in this process by default, or on a running Dask cluster.

The pattern of NVIDIA Nsight Systems' recipes: the per-rank work is a list of
``dask.delayed`` tasks, the same graph whichever scheduler runs it.

* No address (or ``sync``): Dask's local synchronous scheduler, inside this
  process, one task at a time (no server to start). A rank's work is Python
  and numpy on arrays of a few thousand values, which hold the GIL: on the
  2-core machine a thread pool ran the 1,024-rank tasks in 9.0-11.7 s against
  6.6-7.3 s on one thread (``benchmarks/cluster_schedulers.py``; RESULTS, "Per-rank task and local schedulers").
* ``threads``: Dask's local threaded scheduler, in this process: worth it
  when reading the rank folders waits on the storage (a network file system),
  since file reads release the GIL.
* ``processes``: Dask's local multiprocessing scheduler (still no server): a
  pool of worker processes on this host, so the Python parts use every core.
* ``tcp://HOST:PORT`` (``--scheduler``, or ``DASK_SCHEDULER_ADDRESS``): a
  ``distributed.Client`` hands the same tasks to that cluster's workers, which
  read the rank folders at the same path (shared storage) and send back the
  compact per-rank results. Start one with ``dask scheduler`` and
  ``dask worker tcp://HOST:8786`` on each host (docs/multi_worker.md, "On Dask").

Dask is the ``cluster`` extra; without it the command says how to install it.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Optional, Sequence, TypeVar
from contextlib import contextmanager

from npu_tf_profiling.reports.errors import BadInputError

SCHEDULER_ENV = "DASK_SCHEDULER_ADDRESS"
# Each local scheduler: Dask's name for it, and where the tasks run (for the notes).
_LOCAL = {"sync": ("synchronous", "Dask's local scheduler in this process (one thread)"),
          "threads": ("threads", "Dask's local scheduler in this process (threads)"),
          "processes": ("processes", "Dask's local scheduler with a process pool")}
LOCAL_SCHEDULERS = tuple(_LOCAL)
INSTALL_HINT = "pip install 'npu_tf_profiling[cluster]' (or: pip install dask distributed)"
CONNECT_TIMEOUT_S = 30

T = TypeVar("T")


class DaskMissingError(BadInputError):
    """Dask is not installed (exit 2, with the install command)."""


def _dask() -> Any:
    try:
        import dask
    except ImportError as exc:
        raise DaskMissingError(f"the cluster analysis runs on Dask, which is not installed ({exc}): {INSTALL_HINT}") from exc
    return dask


@dataclass
class Engine:
    """Runs lists of tasks; ``where`` says where, for the notes."""

    where: str
    client: Any = None  # a distributed.Client, or None for a local scheduler
    local: str = "sync"  # the local scheduler without a client (``LOCAL_SCHEDULERS``)

    @property
    def workers(self) -> int:
        """How many tasks can run at once (threads here, or over the cluster's workers)."""
        if self.client is None:
            return 1 if self.local == "sync" else os.cpu_count() or 1
        return max(1, sum(w.get("nthreads", 1) for w in self.client.scheduler_info().get("workers", {}).values()))

    def map(self, func: Callable[..., T], items: Sequence[Any], *args: Any) -> list[T]:
        """``[func(item, *args) for item in items]``, each call one Dask task, results in order."""
        dask = _dask()
        tasks = [dask.delayed(func, pure=False)(item, *args) for item in items]
        if not tasks:
            return []
        if self.client is not None:
            return list(self.client.compute(tasks, sync=True))
        return list(dask.compute(*tasks, scheduler=_LOCAL[self.local][0], num_workers=self.workers))


def scheduler_address(given: Optional[str]) -> Optional[str]:
    """``--scheduler``, else ``DASK_SCHEDULER_ADDRESS``, else None (in-process)."""
    address = given or os.environ.get(SCHEDULER_ENV) or None
    return address.strip() if address else None


@contextmanager
def open_engine(address: Optional[str] = None) -> Iterator[Engine]:
    """The engine for ``address`` (see ``scheduler_address``); a client is closed on the way out."""
    _dask()
    if not address or address in LOCAL_SCHEDULERS:
        local = address or "sync"
        yield Engine(where=_LOCAL[local][1], local=local)
        return
    try:
        from distributed import Client
    except ImportError as exc:
        raise DaskMissingError(f"--scheduler needs dask.distributed, which is not installed ({exc}): {INSTALL_HINT}") from exc
    try:
        client = Client(address, timeout=CONNECT_TIMEOUT_S, set_as_default=False)
    except (OSError, TimeoutError) as exc:
        raise BadInputError(f"cannot reach the Dask scheduler at {address}: {exc}") from exc
    try:
        workers = len(client.scheduler_info().get("workers", {}))
        yield Engine(where=f"the Dask cluster at {address} ({workers} worker(s))", client=client)
    finally:
        client.close()


def batches(items: Sequence[T], tasks_per_worker: int = 8, workers: int = 0) -> list[list[T]]:
    """``items`` cut into about ``tasks_per_worker`` x workers batches (at least one item each), in order."""
    workers = workers or os.cpu_count() or 1
    count = max(1, min(len(items), tasks_per_worker * workers))
    size = -(-len(items) // count) if items else 1
    return [list(items[i:i + size]) for i in range(0, len(items), size)]
