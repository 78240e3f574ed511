"""At exit, one line when the environment asked for profiling and nothing took the request.

The ``PROFILING_MODE``/``PROFILING_OPTIONS`` request is read when a
``tf.compat.v1.Session`` is created (by the script, an Estimator or Keras in
graph mode), or when TensorFlow 2 first traces a training step (a
``tf.function``, Keras ``fit``). A step run eagerly (no ``tf.function``, or
``tf.config.run_functions_eagerly(True)``) is never traced and runs unprofiled;
without this line its user would find no PROF folder and no word why.

Only processes that imported TensorFlow are concerned (a ``pip`` or ``npu-tf-prof
report`` started from a shell that exports ``PROFILING_MODE`` is not a training
job), and not the ``npu-tf-prof`` command itself (``points`` loads graphs, it
runs no training), except ``npu-tf-prof run``, which runs the user's script
(`training_job`): an Estimator whose checkpoint is already at ``max_steps``
skips training and creates no session, and said nothing.
"""
from __future__ import annotations

import atexit
import os
import sys

from npu_tf_profiling.config.errors import requests_refused
from npu_tf_profiling.config.resolution import ENV_MODE
from npu_tf_profiling.runtime import profiling_run

_CLI_MODULE = "npu_tf_profiling.cli"
_state = {"registered": False, "training_job": False}


def note_if_unclaimed() -> str | None:
    """The line to print when this process asked for profiling and nothing took it up, else None."""
    if os.environ.get(ENV_MODE, "").strip().lower() != "true":
        return None  # off, or dynamic mode (which watches its config file and logs there)
    command = _CLI_MODULE in sys.modules and not _state["training_job"]
    if "tensorflow" not in sys.modules or command or profiling_run.runs_started():
        return None
    if requests_refused():
        return None  # the user saw why: the options error that refused the request
    return (
        f"npu_tf_profiling: {ENV_MODE}=true, but no training step ran in a tf.compat.v1 Session or a traced "
        "tf.function in this process, so nothing was profiled and no PROF_* folder was written. This package "
        "profiles Sessions (tf.estimator, Keras in graph mode) and TensorFlow 2 training steps in tf.function "
        "(custom loops, Keras model.fit); a step run eagerly (no tf.function, or tf.config.run_functions_eagerly(True)) "
        "is not traced, so it cannot be profiled."
    )


def _print_note() -> None:
    note = note_if_unclaimed()
    if note is not None:
        sys.stderr.write(note + "\n")


def watch() -> None:
    """Print the note at exit when it applies (called by the start-up hook); once per process."""
    if not _state["registered"]:
        _state["registered"] = True
        atexit.register(_print_note)


def training_job() -> None:
    """This `npu-tf-prof` process runs the user's script (`npu-tf-prof run`): the note applies to it."""
    _state["training_job"] = True
    watch()
