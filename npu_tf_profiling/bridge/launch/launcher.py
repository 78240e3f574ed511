"""`npu-tf-prof run [--tf1] SCRIPT [ARGS...]`: run an unmodified Ascend script on CPU/GPU TensorFlow.

The script runs in this process exactly as `python SCRIPT ARGS` would run it:
`sys.argv` is `[SCRIPT, *ARGS]`, `sys.path[0]` is the script's folder, it runs as
`__main__` in the current working directory, `sys.exit(n)` exits with n, and an
uncaught exception prints the script's own traceback (no launcher frames) and
exits with 1. Before it starts, `npu_bridge`/`npu_device`/`hccl` imports are aliased
to this package (unless a real Ascend adapter is installed), TF 2.6-era Keras
module paths the script's own modules import are served (bridge/launch/keras_paths.py)
and, with `--tf1`, TensorFlow is switched to the 1.x API. The launch variables
Ascend's 1-device launch scripts set (RANK_SIZE, RANK_ID, DEVICE_ID, ...) are
filled in where unset (bridge/launch/context.py), and a `ModuleNotFoundError`
the script does not catch is followed by a hint (bridge/launch/import_hints.py).
Profiling is requested the usual ways (PROFILING_MODE/PROFILING_OPTIONS,
NpuOptimizer session config, NPURunConfig).
"""
from __future__ import annotations

import argparse
import os
import runpy
import sys
from types import TracebackType

from npu_tf_profiling.bridge.alias import install_npu_bridge_alias
from npu_tf_profiling.bridge.launch.import_hints import import_hint
from npu_tf_profiling.bridge.launch.keras_paths import serve_keras_2_6_paths
from npu_tf_profiling.bridge.launch.context import fill_launch_defaults, launch_note
from npu_tf_profiling.exit_codes import EXIT_BAD_INPUT

_LAUNCHER_MODULES = frozenset((__name__, runpy.__name__))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--tf1", action="store_true",
                        help="give the script TensorFlow's 1.x API (import tensorflow as tf -> tf.compat.v1, v2 behaviour off)")
    parser.add_argument("script", help="the Python script (or a folder/zip with __main__.py), as for `python SCRIPT`")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="arguments passed to the script unchanged")


def run(args: argparse.Namespace) -> int:
    if not os.path.exists(args.script):
        print(f"npu-tf-prof run: can't open file {args.script!r}: no such file or directory", file=sys.stderr)
        return EXIT_BAD_INPUT
    from npu_tf_profiling.runtime import unclaimed_request

    unclaimed_request.training_job()  # a request nothing took is said at exit, as for `python SCRIPT`
    filled = fill_launch_defaults(os.environ)
    if filled:
        print(launch_note(filled), file=sys.stderr)
    if args.tf1:
        from npu_tf_profiling.bridge.launch.tf1_api import enable_tf1

        enable_tf1()
    install_npu_bridge_alias()
    serve_keras_2_6_paths()
    return run_script(args.script, list(args.args))


def run_script(script: str, script_args: list[str]) -> int:
    """Run `script` as `__main__` with `script_args`; returns 1 after printing an uncaught exception.

    `SystemExit` (and KeyboardInterrupt) propagate unchanged, so the process
    exits with the script's own code.
    """
    sys.argv = [script, *script_args]
    if os.path.isfile(script):  # runpy itself puts a folder or zip archive first on sys.path
        sys.path[0] = os.path.dirname(os.path.realpath(script))
    try:
        runpy.run_path(script, run_name="__main__")
    except Exception as exc:  # noqa: BLE001 - reported exactly as the interpreter would, then exit code 1
        trimmed = _script_frames(exc.__traceback__)
        sys.excepthook(type(exc), exc.with_traceback(trimmed), trimmed)  # the hook prints exc.__traceback__
        hint = import_hint(exc, script)
        if hint:
            print(hint, file=sys.stderr)
        return 1
    return 0


def _script_frames(tb: TracebackType | None) -> TracebackType | None:
    """The traceback without the launcher's and runpy's leading frames (as `python SCRIPT` shows it)."""
    first = tb
    while first is not None and first.tb_frame.f_globals.get("__name__") in _LAUNCHER_MODULES:
        first = first.tb_next
    return first if first is not None else tb

