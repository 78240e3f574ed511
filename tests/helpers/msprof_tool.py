"""Run Huawei's msprof-analyze (from .venv-msprof, which `make test` builds) and check what it logged.

The tool logs problems instead of failing: it exits 0 after "Failed to allocate
profiling data!" or a recipe's "No valid ... data". So the tests read its log:
``problems`` lists the lines that mean it did not read our data as its own.
"""
from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
TOOL = REPO / ".venv-msprof" / "bin" / "msprof-analyze"
# A hang guard, not a bound: `advisor all` on the 2-rank job took 24 s at load 7, and over 240 s once in a
# fresh-clone suite run beside the multi-rank tests at load 9-11 (2026-12-05).
TIMEOUT_S = 600

# Log lines that mean msprof-analyze could not read (part of) our data.
_PROBLEMS = re.compile(
    r"\[ERROR\]|Traceback|No valid|missing|Unknown profiling type|has no attribute|Failed to allocate|Can not get rank info",
    re.IGNORECASE,
)


def run_msprof_analyze(*args: str | Path, cwd: Path) -> str:
    """Run ``msprof-analyze ARGS`` in ``cwd``; returns stdout + stderr (asserts exit code 0)."""
    if not TOOL.exists():
        pytest.fail(f"{TOOL} is missing: `make test` builds it (`make msprof-analyze`, pins in constraints-msprof.txt)")
    env = {k: v for k, v in os.environ.items() if not k.startswith("PROFILING_")}
    proc = subprocess.run([str(TOOL), *map(str, args)], cwd=cwd, env=env, capture_output=True, text=True, timeout=TIMEOUT_S)
    log = proc.stdout + proc.stderr
    assert proc.returncode == 0, log
    return log


def problems(log: str) -> list[str]:
    """The log lines that say msprof-analyze failed to read something."""
    return [line for line in log.splitlines() if _PROBLEMS.search(line)]
