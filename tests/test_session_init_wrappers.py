"""The package's one patch of `BaseSession.__init__` (`runtime/session/base_session.py`).

Profiling and the multi-rank job both act when a session is made; they go through
one patch whose wrappers run in a fixed order, whatever order they were
installed in, and every callback registered before TensorFlow loads runs when it
does.
"""
from __future__ import annotations

import subprocess
import sys
import textwrap

import tensorflow as tf

from npu_tf_profiling.runtime.session import base_session


def test_one_patch_wraps_tensorflows_own_init_with_the_wrappers_in_their_order() -> None:
    from npu_tf_profiling.bridge.ranks import rank_session  # installs the rank job's wrapper, as hccl_ops does

    rank_session.install()
    patched = tf.compat.v1.Session.__mro__[1].__init__
    assert getattr(patched, "__npu_tf_profiling_session_init__", False)
    original = patched.__wrapped__
    assert original.__module__ == base_session.SESSION_MODULE and not hasattr(original, "__wrapped__")
    assert base_session.session_init_wrappers() == ("rank_job", "profiling")


def test_wrappers_run_in_registry_order_and_can_change_the_arguments() -> None:
    """A fresh process: `profiling` is registered first, `rank_job` second; `rank_job` still runs outermost."""
    code = textwrap.dedent("""
        from npu_tf_profiling.runtime.session import base_session
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
    env_free = {"PYTHONPATH": "."}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=240,
                          env={**__import__("os").environ, **env_free, "PROFILING_MODE": ""})
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[('rank_job', 'local-target-replaced'), ('profiling', '')] ['first', 'second']"
