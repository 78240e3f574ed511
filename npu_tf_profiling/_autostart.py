"""Imported by the start-up hook (.pth) only when PROFILING_MODE is set.

Lets a script that never imports this package be profiled through the two
environment variables alone, as upstream does. Importing the package installs
the (lazy) Session integration; the exit note says so when no session ever
took the request (eager TensorFlow 2 code), instead of leaving no trace.
"""
import npu_tf_profiling  # noqa: F401
from npu_tf_profiling.runtime import unclaimed_request

unclaimed_request.watch()
