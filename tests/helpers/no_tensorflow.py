"""Proof that the offline rooms (reports, cluster, CLI) never load TensorFlow."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

_CHECK = """
import sys as _sys
_loaded = sorted(m for m in _sys.modules if m == "tensorflow" or m.startswith("tensorflow."))
assert not _loaded, _loaded
"""


def run_without_tensorflow(code: str, cwd: Path) -> str:
    """Run `code` in a fresh interpreter, then assert no tensorflow module was imported; returns stdout."""
    env = dict(os.environ, PYTHONPATH=str(REPO))
    env.pop("PROFILING_MODE", None)
    proc = subprocess.run([sys.executable, "-c", code + _CHECK], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout
