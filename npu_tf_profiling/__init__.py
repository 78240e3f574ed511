"""npu_tf_profiling: Ascend npu_bridge-style profiling for TensorFlow training (Session, Estimator, tf.function, Keras fit).

Importing the package installs the Session integration (as importing
``npu_bridge.npu_init`` does upstream) without importing TensorFlow itself: the
hook is applied when TensorFlow's session module loads, so the offline
``reports`` and the CLI stay fast and TensorFlow-free.
"""
from pathlib import Path
from typing import Any

from npu_tf_profiling.config import (
    ProfilingConfig,
    ProfilingOptions,
    ProfilingOptionsError,
    resolve_profiling,
)
from npu_tf_profiling.bridge.alias import install_npu_bridge_alias
from npu_tf_profiling.runtime import install as _install_session_integration

__version__ = "0.1.0"
__all__ = [
    "ProfilingConfig", "ProfilingOptions", "ProfilingOptionsError", "install_npu_bridge_alias", "resolve_profiling",
    "start_tf2_profiling",
]


def start_tf2_profiling(profiling_options: Any = None, enable_profiling: bool = True) -> Any:
    """Profile the TensorFlow 2 steps (tf.function loops, Keras fit) traced from now on; see docs/tf2.md."""
    from npu_tf_profiling.runtime.functions.attach import start_tf2_profiling as start

    return start(profiling_options, enable_profiling)


def _build_reports(prof_dir: Path) -> Any:
    """The reports' entry point, handed to the runtime (which must not import the reports room); bounded for long runs."""
    from npu_tf_profiling.reports.job_reports import build_job_reports

    return build_job_reports(prof_dir)


_install_session_integration(_build_reports)
