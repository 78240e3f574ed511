"""other_runs.jsonl: the session runs and tf.function calls that were not training steps, one JSON line each.

The time between two training iterations (Data Aug Bound) holds the wait for
input, but also whatever else the script ran there: an evaluation `sess.run`
every N steps, a summary run, Keras' validation pass at an epoch's end. The
step-trace rows cannot tell those apart, so the runtime writes each such run's
span here, and the reports split the gap by what overlaps it (``reports.step.between``).
A run is one line written with one os.write (a few per second at most, and
only for runs that are not iterations); a torn last line is skipped and counted.
A call of a training step that traced a new concrete function is a line of kind
"retrace" from the call's start to the end of its trace, with its model and new input signature
(``K_MODEL_ID``, ``K_SIGNATURE``): the reports take that iteration as warm-up.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional

import numpy as np

from npu_tf_profiling.raw_format.json_lines import json_objects

K_START, K_END, K_KIND, K_NAME = "start_us", "end_us", "kind", "name"
K_MODEL_ID, K_SIGNATURE = "model_id", "signature"  # a retrace's line only

INPUT_READS = "input reads"  # a session run that fetches an input pipeline's batch (to feed it to the step)
EVALUATION = "evaluation"  # a session run that does not train, fetches no summary and saves nothing
SUMMARIES = "summaries"
CHECKPOINT = "checkpoint"
INITIALIZATION = "initialization"  # variable, table or iterator initializers (before training, mostly)
VARIABLE_READS = "variable reads"  # a run that only reads variables (a hook reading the global step)
VALIDATION = "validation"  # Keras' test_function (fit's validation pass)
PREDICTION = "prediction"  # Keras' predict_function
FUNCTION_CALLS = "function calls"  # any other tf.function called between steps
RETRACE = "retrace"  # a training step's call that traced a new concrete function (the call's start to the trace's end)
KINDS = (INPUT_READS, EVALUATION, SUMMARIES, CHECKPOINT, INITIALIZATION, VARIABLE_READS, VALIDATION, PREDICTION, FUNCTION_CALLS,
         RETRACE)


def encode_other_run(start_us: float, end_us: float, kind: str, name: Optional[str], details: Optional[dict] = None) -> bytes:
    record = {K_START: round(start_us, 1), K_END: round(end_us, 1), K_KIND: kind, K_NAME: name, **(details or {})}
    return (json.dumps(record) + "\n").encode()


@dataclass(frozen=True)
class Retrace:
    """A retrace line: the call's start and the trace's end (µs), the function, its Model ID (None when not written) and new signature."""

    start_us: float
    end_us: float
    function: str
    model_id: Optional[int]
    signature: str


@dataclass
class OtherRuns:
    """Every recorded run of one device folder: spans in µs (sorted by start), kinds, and the lines skipped."""

    starts: np.ndarray = field(default_factory=lambda: np.zeros(0))
    ends: np.ndarray = field(default_factory=lambda: np.zeros(0))
    kinds: list[str] = field(default_factory=list)
    skipped: int = 0
    retraces: list[Retrace] = field(default_factory=list)


def read_other_runs(path: Path) -> OtherRuns:
    """The runs in `path` (none when it does not exist); unreadable lines are counted in `skipped`."""
    records, skipped = json_objects(path)
    starts, ends, kinds, retraces = [], [], [], []
    for record in records:
        try:
            start, end, kind = float(record[K_START]), float(record[K_END]), str(record[K_KIND])
            retrace = _retrace(record, start, end) if kind == RETRACE else None
        except (ValueError, KeyError, TypeError, AttributeError):
            skipped += 1
            continue
        if not (math.isfinite(start) and math.isfinite(end)) or end < start:
            skipped += 1
            continue
        starts.append(start)
        ends.append(end)
        kinds.append(kind)
        if retrace is not None:
            retraces.append(retrace)
    order = np.argsort(np.asarray(starts, dtype=np.float64), kind="stable")
    return OtherRuns(np.asarray(starts, dtype=np.float64)[order], np.asarray(ends, dtype=np.float64)[order],
                     [kinds[i] for i in order], skipped, sorted(retraces, key=lambda r: r.start_us))


def _retrace(record: dict, start: float, end: float) -> Retrace:
    model_id = record.get(K_MODEL_ID)
    return Retrace(start, end, str(record.get(K_NAME) or "?"), None if model_id is None else int(model_id),
                   str(record.get(K_SIGNATURE) or "unknown"))
