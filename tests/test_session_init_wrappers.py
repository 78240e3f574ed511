"""The package's one patch of `BaseSession.__init__` (`runtime/session/base_session.py`).

Profiling and the multi-rank job both act when a session is made; they go through
one patch whose wrappers run in a fixed order, whatever order they were
installed in, and every callback registered before TensorFlow loads runs when it
does.
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

from npu_tf_profiling.runtime.session import base_session

RANK_SESSION = "npu_tf_profiling.bridge.ranks.session_join"


def test_one_patch_wraps_tensorflows_own_init_with_the_wrappers_in_their_order() -> None:
    """A fresh process: the package (profiling) and the rank job (as `hccl_ops` installs it) both wrap, once."""
    code = textwrap.dedent(f"""
        import npu_tf_profiling
        from {RANK_SESSION} import install
        install()
        import tensorflow as tf
        from npu_tf_profiling.runtime.session import base_session
        patched = tf.compat.v1.Session.__mro__[1].__init__
        original = patched.__wrapped__
        print(getattr(patched, "__npu_tf_profiling_session_init__", False), original.__module__,
              hasattr(original, "__wrapped__"), base_session.session_init_wrappers())
    """)
    assert _run(code) == f"True {base_session.SESSION_MODULE} False ('rank_job', 'profiling')"


def test_wrappers_run_in_registry_order_and_can_change_the_arguments() -> None:
    """A fresh process: `profiling` is registered first, `rank_job` second; `rank_job` still runs outermost."""
    code = textwrap.dedent("""
        from npu_tf_profiling.runtime.session import base_session
        base_session._WRAPPERS.clear()  # the package's own profiling wrapper, registered at import: replaced by a stub
        calls = []
        def profiling(init, session, target, graph, config):
            calls.append(("profiling", target))
            init(session, target, graph, config)
        def rank_job(init, session, target, graph, config):
            calls.append(("rank_job", target))
            init(session, "", graph, config)
        base_session.wrap_session_init("profiling", profiling)
        base_session.wrap_session_init("rank_job", rank_job)
        seen = []
        base_session.when_session_module_loads(lambda module: seen.append("first"))
        base_session.when_session_module_loads(lambda module: seen.append("second"))
        import tensorflow as tf
        with tf.compat.v1.Session("local-target-replaced") as session:
            pass
        print(calls, seen)
    """)
    assert _run(code) == "[('rank_job', 'local-target-replaced'), ('profiling', '')] ['first', 'second']"


def _run(code: str) -> str:
    """`code`'s last printed line, run in a fresh process without a profiling request."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PROFILING_", "RANK_"))}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=240, env=env)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()[-1]
