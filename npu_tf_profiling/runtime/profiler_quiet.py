"""TensorFlow's profiler prints five INFO lines per session it starts and stops; the package's windows hide them.

`tf.profiler.experimental.start`/`stop` log from C++ ("Profiler session
initializing.", "... started.", "... collecting data.", "... tear down.",
"Collecting XSpace to repository: ...") unless TF_CPP_MIN_LOG_LEVEL was set
before TensorFlow loaded (its C++ logging reads it once). A TensorFlow 2
task_trace window starts one session per window, so a job would print them
for every window it traces. Around those two calls only, file descriptor 2 is
sent to a temporary file; afterwards everything written there goes back to
stderr except those lines, so nothing another thread wrote meanwhile is lost
(it is only delayed by the call's few milliseconds).
"""
from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from typing import Iterator

PROFILER_LINES = (b"profiler_session.cc", b"save_profile.cc")


@contextlib.contextmanager
def profiler_lines_hidden() -> Iterator[None]:
    """Hide TensorFlow's profiler session lines written to fd 2 inside the block; keep every other line."""
    try:
        sys.stderr.flush()
        saved = os.dup(2)
        capture = tempfile.TemporaryFile()
        os.dup2(capture.fileno(), 2)
    except (OSError, ValueError, AttributeError):  # no fd 2 to redirect (an embedded interpreter): say it all
        yield
        return
    try:
        yield
    finally:
        with contextlib.suppress(OSError, ValueError, AttributeError):
            sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)
        capture.seek(0)
        kept = [line for line in capture.read().splitlines(keepends=True)
                if not any(marker in line for marker in PROFILER_LINES)]
        capture.close()
        if kept:
            os.write(2, b"".join(kept))
