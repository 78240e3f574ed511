"""A hint after a script's uncaught `ModuleNotFoundError`: where its module is, or what lists the packages it needs.

Of 80 ModelZoo TF1 scripts started by hand, 43 stopped at a third-party
import (scipy, cv2, sklearn, ...) and 6 at one of their own modules, which
lived in a parent folder that the model's launch script puts on `PYTHONPATH`.
The traceback alone says neither. The hint names the folder that has the
module (to add to `PYTHONPATH`, or to run from when the script puts its working
directory on `sys.path`), or else the model folder's `requirements.txt`.
Nothing is changed; the exit code stays the script's.
"""
from __future__ import annotations

import os
import sys

PARENT_LEVELS = 4  # a model folder's entry scripts sit at most a few levels below it (src/, code/, r1/resnet/)


def _has_module(folder: str, name: str) -> bool:
    return os.path.isdir(os.path.join(folder, name)) or os.path.isfile(os.path.join(folder, f"{name}.py"))


def _parents(script: str) -> list[str]:
    folder = os.path.dirname(os.path.realpath(script))
    parents = []
    for _ in range(PARENT_LEVELS):
        parent = os.path.dirname(folder)
        if parent == folder:
            break
        parents.append(parent)
        folder = parent
    return parents


def import_hint(exc: BaseException, script: str) -> str | None:
    """The hint line for `exc` raised by `script`, or None when it is not a missing top-level module we can place."""
    if not isinstance(exc, ModuleNotFoundError) or not exc.name:
        return None
    top = exc.name.split(".")[0]
    if top in ("tensorflow", "tensorflow_core") or top in sys.modules:
        return None  # a missing sub-module of an installed package: the message already names it
    searched = {os.path.realpath(entry) for entry in sys.path if entry}
    for parent in _parents(script):
        if _has_module(parent, top) and parent not in searched:
            return (f"npu-tf-prof run: hint: {top!r} is in {parent}, a parent folder of the script: "
                    f"run with PYTHONPATH={parent} (the model's launch script sets it), "
                    "or from that folder if the script adds its working directory to sys.path")
    for folder in [os.path.dirname(os.path.realpath(script)), *_parents(script)]:
        requirements = os.path.join(folder, "requirements.txt")
        if os.path.isfile(requirements):
            return (f"npu-tf-prof run: hint: {top!r} is not installed; the model lists the packages it needs in "
                    f"{requirements} (pip install -r {requirements})")
    return None
