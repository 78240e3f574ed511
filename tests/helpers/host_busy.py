"""How much CPU the host's other processes took while a timing test ran, and a wait for a quiet host.

The timing tests bound how late a stamp may be. On 2 cores another process's burst preempts a
thread between an op and its stamp, and a few such calls decide a p95. The 1-minute load average
cannot tell that: right after the parallel phase it still reads ~2.7 on an idle host, and a burst
of a few seconds hardly moves it. So the tests measure the CPU taken by everything but this
process and its children (the system's busy and stolen time, less their own) over their run, and
loosen a tail bound only when others took some. `make test` runs this module between its phases
to start the timing tests on a host that has settled (see `main`).
"""
from __future__ import annotations

import argparse
import resource
import time
from dataclasses import dataclass, field

import psutil

# Others' CPU, in cores averaged over a run, above which a run's tail is not the profiler's. Measured on this project's
# idle 2-core VM (2026-12-07, eight times `.venv/bin/python -m tests.helpers.host_busy --wait 0 --window 10`): 0.003-0.02 cores.
QUIET_OTHERS_CORES = 0.05


def _system_busy_s() -> float:
    """Seconds of CPU the whole system spent not idle: user, system, interrupts and time stolen by the hypervisor."""
    times = psutil.cpu_times()
    return sum(getattr(times, name, 0.0) for name in ("user", "nice", "system", "irq", "softirq", "steal", "guest"))


def _own_busy_s() -> float:
    """CPU seconds of this process and of its waited-for children (a finished `subprocess.run` counts)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


@dataclass
class OthersCpu:
    """A block's wall time and the cores other processes kept busy meanwhile (`with OthersCpu() as others:`)."""

    cores: float = 0.0
    wall_s: float = 0.0
    _start: tuple[float, float, float] = field(default=(0.0, 0.0, 0.0), repr=False)

    def __enter__(self) -> "OthersCpu":
        self._start = (time.monotonic(), _system_busy_s(), _own_busy_s())
        return self

    def __exit__(self, *exc: object) -> None:
        wall0, system0, own0 = self._start
        self.wall_s = time.monotonic() - wall0
        others_s = (_system_busy_s() - system0) - (_own_busy_s() - own0)
        self.cores = max(0.0, others_s) / self.wall_s if self.wall_s > 0 else 0.0

    @property
    def quiet(self) -> bool:
        return self.cores <= QUIET_OTHERS_CORES


def wait_for_quiet(limit_s: float, window_s: float = 1.0) -> tuple[float, OthersCpu]:
    """Wait until a `window_s` window finds the host quiet, at most `limit_s`; returns the wait and the last window."""
    started = time.monotonic()
    while True:
        with OthersCpu() as window:
            time.sleep(window_s)
        waited = time.monotonic() - started
        if window.quiet or waited >= limit_s:
            return waited, window


def busiest_processes(count: int = 5) -> list[str]:
    """The processes using the most CPU over a short window, as 'pid name cpu%' lines (what kept the host busy)."""
    processes = list(psutil.process_iter(["pid", "name", "cmdline"]))
    for process in processes:
        try:
            process.cpu_percent(None)
        except psutil.Error:
            pass
    time.sleep(0.5)
    usage = []
    for process in processes:
        try:
            usage.append((process.cpu_percent(None), process.info["pid"], " ".join(process.info["cmdline"] or [])[:120]))
        except psutil.Error:
            pass
    return [f"{pid} {cmd or '?'} {cpu:.0f}%" for cpu, pid, cmd in sorted(usage, reverse=True)[:count] if cpu > 0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--wait", type=float, default=60.0, help="seconds to wait at most for a quiet host")
    parser.add_argument("--window", type=float, default=1.0, help="seconds each measure lasts")
    args = parser.parse_args()
    waited, window = wait_for_quiet(args.wait, args.window)
    print(f"host quiet check: others' CPU {window.cores:.3f} cores over {window.wall_s:.0f} s, after {waited:.0f} s")
    if not window.quiet:
        print("still busy; the busiest processes:", *busiest_processes(), sep="\n  ")


if __name__ == "__main__":
    main()
