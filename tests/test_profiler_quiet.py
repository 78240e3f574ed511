"""TensorFlow's profiler lines are hidden around the package's own profiler sessions, and nothing else is.

A subprocess without TF_CPP_MIN_LOG_LEVEL (TensorFlow reads it once, at load) starts and
stops a real profiler session twice: bare, the lines are there (the check can fail); inside
`profiler_lines_hidden`, they are gone while a line another writer put on fd 2 meanwhile stays.
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent("""
    import os, sys, tempfile
    import tensorflow as tf
    from npu_tf_profiling.runtime.profiler_quiet import profiler_lines_hidden

    def window():
        tf.profiler.experimental.start(tempfile.mkdtemp())
        tf.profiler.experimental.stop()

    window()
    sys.stderr.flush(); os.write(2, b"=== hidden from here\\n")
    with profiler_lines_hidden():
        window()
        os.write(2, b"another writer's line\\n")
""")


def test_profiler_session_lines_are_hidden_and_other_lines_kept() -> None:
    environ = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    done = subprocess.run([sys.executable, "-c", SCRIPT], env=environ, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    bare, hidden = done.stderr.split("=== hidden from here")
    assert "Profiler session started" in bare and "Profiler session tear down" in bare
    assert "Profiler session" not in hidden and "Collecting XSpace" not in hidden
    assert "another writer's line" in hidden
