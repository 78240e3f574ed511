"""Imported by the start-up hook (.pth) only when PROFILING_MODE is set.

Lets a script that never imports this package be profiled through the two
environment variables alone, as upstream does. Importing the package installs
the (lazy) Session integration and nothing more.
"""
import npu_tf_profiling  # noqa: F401
