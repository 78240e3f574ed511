"""The runtime room: attaching to sessions (`session/`) and to TensorFlow 2 functions (`functions/`), in-graph probes, and the raw-data writer.

Only `install()` is imported eagerly (it needs no TensorFlow); everything that
touches TensorFlow loads when a profiled session or a traced step appears. The runtime writes raw
files and never imports the reports: `install` receives the function that builds
them.
"""
from types import ModuleType

from npu_tf_profiling.runtime import call_sites
from npu_tf_profiling.runtime.profiling_run import ReportBuilder, set_report_builder
from npu_tf_profiling.runtime.session.attach_on_creation import install_session_attach
from npu_tf_profiling.runtime.session.base_session import when_session_module_loads


def install(report_builder: ReportBuilder) -> None:
    """Make every tf.compat.v1.Session created, and every TensorFlow 2 step traced, from now on honour profiling requests."""
    set_report_builder(report_builder)
    install_session_attach()
    call_sites.install()
    when_session_module_loads(_install_function_transform)


def _install_function_transform(_session_module: ModuleType) -> None:
    from npu_tf_profiling.runtime.functions.attach import install_function_transform, warn_if_requested_but_not_installed

    warn_if_requested_but_not_installed(install_function_transform())
