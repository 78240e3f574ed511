"""The Session patch: every `tf.compat.v1.Session` resolves its profiling request when created.

Upstream, importing `npu_bridge.npu_init` wraps `Session.__init__`; we do the
same through the package's one `BaseSession.__init__` patch (`base_session`), so
Session, InteractiveSession and the sessions MonitoredSession/Estimator create are
all covered. A bad request raises here, before any step runs; a session that asks
for nothing is left exactly as it was.
"""
from __future__ import annotations

from typing import Any

from npu_tf_profiling.config import resolve_profiling
from npu_tf_profiling.config.notices import warn_user
from npu_tf_profiling.runtime.session.base_session import SessionInit, wrap_session_init


def install_session_attach() -> None:
    """Every session made from now on resolves its profiling request (TensorFlow is not imported here)."""
    wrap_session_init("profiling", _attach_once_made)


def _attach_once_made(init: SessionInit, session: Any, target: str, graph: Any, config: Any) -> None:
    init(session, target, graph, config)
    try:
        resolution = resolve_profiling(config)
        dynamic = None
        if resolution is None:
            from npu_tf_profiling.runtime.dynamic import dynamic_config_path

            dynamic = dynamic_config_path()
    except Exception:
        session.close()  # bad profiling input: no half-made session is left behind
        raise
    if resolution is not None or dynamic is not None:
        attach(session, resolution, dynamic)


def attach(session: Any, resolution: Any, dynamic_config: Any) -> None:
    """Attach profiling to a live session; a failure is a warning and the session runs unprofiled."""
    try:
        from npu_tf_profiling.runtime.collection import Collection, StaticSource
        from npu_tf_profiling.runtime.dynamic import controller_for
        from npu_tf_profiling.runtime.session.profiler import SessionProfiler

        if resolution is not None:
            collection = Collection.start(resolution)
            if not (collection.training_trace or collection.task_trace):
                collection.run.add_note("training_trace and task_trace are both off: nothing is recorded")
                return
            options = resolution.options
            SessionProfiler(session, StaticSource(collection, options.fp_point or "", options.bp_point or ""), dynamic=False)
        else:
            SessionProfiler(session, controller_for(dynamic_config), dynamic=True)
    except Exception as exc:  # noqa: BLE001 - profiling must never hurt the job
        warn_user(f"npu_tf_profiling: could not attach profiling to the session ({exc!r}); training continues")
