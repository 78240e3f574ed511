"""call_sites.json: the lines of the user's script that set up what `advise` may tell them to change.

A verdict such as "input-bound" leaves the user to find the line that built
the pipeline. The runtime notes, once per site (not per step), where the
script called the APIs whose arguments are the knobs: ``Dataset.map`` (with
or without ``num_parallel_calls``), ``prefetch``, ``cache``, ``interleave``,
the file readers, ``tf.py_function``/``numpy_function``, Keras'
``Model.compile`` (its ``steps_per_execution``), ``NPURunConfig`` (its
``iterations_per_loop``), the line that runs the training step, and the lines
of the runs between steps (``other_runs.jsonl``'s kinds). The whole list is
small, so it is rewritten atomically (``call_sites.json`` in ``data/``) when
the reports are built and at close.

One site: {"api": str, "file": str, "line": int, "function": str,
           "args": {name: value}, "calls": int}   (values are JSON scalars; "AUTOTUNE" for tf.data.AUTOTUNE)
plus the host's cores and its 1-minute load average as the file was last written (the end of the run):
{"cpu_count": int, "load_average": float | null, "sites": [site, ...]}.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CALL_SITES_FILE = "call_sites.json"

# The APIs recorded ("api").
MAP = "Dataset.map"
PREFETCH = "Dataset.prefetch"
CACHE = "Dataset.cache"
INTERLEAVE = "Dataset.interleave"
FILE_READER = "file reader"  # TFRecordDataset, TextLineDataset, FixedLengthRecordDataset; args: {"reader": name}
PY_FUNCTION = "py_function"  # tf.py_function / numpy_function / py_func; args: {"in_pipeline": bool}
COMPILE = "Model.compile"  # args: {"steps_per_execution": int | null}
RUN_CONFIG = "NPURunConfig"  # args: {"iterations_per_loop": int}
TRAINING_RUN = "training step"  # the line that runs the training step (a Session's train-op run)
OTHER_RUN = "other run"  # args: {"kind": other_runs kind, "name": str | null}
AUTOTUNE = "AUTOTUNE"
PIPELINE_STEPS = ("batch", "padded_batch", "repeat", "shuffle")  # recorded as "Dataset.<name>", no args
DATASET_APIS = (MAP, PREFETCH, CACHE, INTERLEAVE, *(f"Dataset.{name}" for name in PIPELINE_STEPS))


@dataclass(frozen=True)
class CallSite:
    api: str
    file: str
    line: int
    function: str
    args: dict[str, Any] = field(default_factory=dict)
    calls: int = 1  # the calls seen from this line (a run kind's callers are looked up a bounded number of times)

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}"

    def to_dict(self) -> dict[str, Any]:
        return {"api": self.api, "file": self.file, "line": self.line, "function": self.function, "args": dict(self.args),
                "calls": self.calls}


@dataclass
class CallSites:
    """What one device folder's call_sites.json holds (empty when it has none)."""

    sites: list[CallSite] = field(default_factory=list)
    cpu_count: int | None = None
    load_average: float | None = None
    recorded: bool = False  # the file exists: its absence means an earlier version (or a failed write)

    def of(self, api: str) -> list[CallSite]:
        return [s for s in self.sites if s.api == api]

    def free_cores(self, own_busy: float | None = None) -> int | None:
        """The cores a parallel pipeline can count on: the host's, less the load of everything else (at least 1).

        The load average counts the training process's own runnable threads too: ``own_busy`` is how many
        cores it kept busy (info.json's process_cpu), one when unknown. A py_function case at 1.2 busy cores
        had a load of 2.2 on 2 cores: counting the process as one left it no free core, and no gain."""
        if self.cpu_count is None:
            return None
        busy = max(0.0, (self.load_average or 0.0) - (1.0 if own_busy is None else max(1.0, own_busy)))
        return max(1, int(round(self.cpu_count - min(busy, self.cpu_count - 1))))


def encode_call_sites(sites: list[CallSite], cpu_count: int | None, load_average: float | None = None) -> dict[str, Any]:
    return {"cpu_count": cpu_count, "load_average": load_average, "sites": [s.to_dict() for s in sites]}


def read_call_sites(path: Path) -> CallSites:
    """The sites in `path`; an unreadable file or entry is left out (this is advice, never a reason to fail)."""
    try:
        payload = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return CallSites()
    if not isinstance(payload, dict):
        return CallSites()
    sites = []
    for item in payload.get("sites") or []:
        try:
            sites.append(CallSite(str(item["api"]), str(item["file"]), int(item["line"]), str(item.get("function", "")),
                                  dict(item.get("args") or {}), int(item.get("calls", 1))))
        except (KeyError, TypeError, ValueError):
            continue
    cpu, load = payload.get("cpu_count"), payload.get("load_average")
    return CallSites(sites, cpu if isinstance(cpu, int) and cpu > 0 else None,
                     float(load) if isinstance(load, (int, float)) and load >= 0 else None, True)
