"""The environment Ascend's 1-device launch scripts give a training script, filled in where the user left it unset.

ModelZoo's `test/train_*_1p.sh` export `RANK_SIZE=1 RANK_ID=0 DEVICE_ID=0
ASCEND_DEVICE_ID=0 JOB_ID=10087` (and `DEVICE_INDEX=$RANK_ID`, which 43 files
read) before starting Python, and some entry scripts read them at import
(`int(os.getenv('RANK_SIZE'))`: 315 files), so started by hand they die with a
KeyError or `int(None)` before any training code. `npu-tf-prof run`
sets the unset ones and says which, once.

A value the user set always wins. A multi-process launch is left alone
entirely: with `TF_CONFIG` (a cluster), a `RANK_TABLE_FILE`, or `RANK_SIZE`
other than 1, the ranks come from there (bridge/ranks/discovery.py), and a filled-in
`RANK_SIZE=1` or `DEVICE_ID=0` would contradict them or make every rank 0.
One device variable set by the user fills the other (the launch scripts export
`DEVICE_ID=$ASCEND_DEVICE_ID`), so the two never disagree; `DEVICE_INDEX`
follows `RANK_ID` as it does there.
"""
from __future__ import annotations

import json
from typing import MutableMapping

LAUNCH_DEFAULTS: dict[str, str] = {"RANK_SIZE": "1", "RANK_ID": "0", "DEVICE_ID": "0", "ASCEND_DEVICE_ID": "0",
                                   "JOB_ID": "10087", "DEVICE_INDEX": "0"}


def _multi_process(environ: MutableMapping[str, str]) -> bool:
    if environ.get("RANK_TABLE_FILE", "").strip() or environ.get("RANK_SIZE", "1").strip() not in ("", "1"):
        return True
    try:
        return "cluster" in json.loads(environ.get("TF_CONFIG", "") or "{}")
    except (ValueError, TypeError):
        return bool(environ.get("TF_CONFIG", "").strip())  # malformed: ranks/discovery.py reports it; do not add to it


def fill_launch_defaults(environ: MutableMapping[str, str]) -> dict[str, str]:
    """Set each unset (or empty) LAUNCH_DEFAULTS variable in `environ`; returns what was set."""
    if _multi_process(environ):
        return {}
    device = environ.get("DEVICE_ID", "").strip() or environ.get("ASCEND_DEVICE_ID", "").strip()
    defaults = dict(LAUNCH_DEFAULTS, **({"DEVICE_ID": device, "ASCEND_DEVICE_ID": device} if device else {}))
    defaults["DEVICE_INDEX"] = environ.get("RANK_ID", "").strip() or "0"
    filled = {name: value for name, value in defaults.items() if not environ.get(name, "").strip()}
    environ.update(filled)
    return filled


def launch_note(filled: dict[str, str]) -> str:
    settings = " ".join(f"{name}={value}" for name, value in filled.items())
    return f"npu-tf-prof run: set {settings}, as Ascend's 1-device launch scripts do (set them yourself to change them)"
