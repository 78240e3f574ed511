"""The runtime room: attaching to sessions, in-graph probes, and the raw-data writer.

Only `install()` is imported eagerly (it needs no TensorFlow); everything that
touches TensorFlow loads when a profiled session appears. The runtime writes raw
files and never imports the reports: `install` receives the function that builds
them.
"""
from npu_tf_profiling.runtime.profiling_run import ReportBuilder, set_report_builder
from npu_tf_profiling.runtime.session_integration import patch_session_module
from npu_tf_profiling.runtime.tf_hook import when_session_module_loads


def install(report_builder: ReportBuilder) -> None:
    """Make every tf.compat.v1.Session created from now on honour profiling requests."""
    set_report_builder(report_builder)
    when_session_module_loads(patch_session_module)
