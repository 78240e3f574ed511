"""Processes run at once: a profiled run and its plain twin side by side, on the two cores a test machine has.

A bit-identity check needs both runs, and neither waits on the other, so
running them together takes the time of the slower one instead of both. Only
the trained results and the rows are compared, never timings, so the shared
cores change no assertion.
"""
from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Command:
    argv: list[str]
    env: dict[str, str]
    cwd: Path | None = None


def run_side_by_side(commands: list[Command], timeout: float) -> list[subprocess.CompletedProcess]:
    """Start every command, then wait for all (each killed if still running at `timeout`)."""
    procs = [subprocess.Popen(c.argv, env=c.env, cwd=c.cwd, text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
             for c in commands]
    done = []
    try:
        for command, proc in zip(commands, procs):
            out, err = proc.communicate(timeout=timeout)
            done.append(subprocess.CompletedProcess(command.argv, proc.returncode, out, err))
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.communicate()
    return done
