"""Which iterations task_trace disturbed, so that statistics can leave them out.

A task-traced iteration runs with ``RunOptions(FULL_TRACE)``: TensorFlow times
every op, which makes the iteration itself slower, and after it returns the
runtime serializes and writes its step stats, before the script's next run
starts, so that time lands in the *next* iteration's Data Aug Bound. Both rows
stay in the step-trace files (they are what happened), but an average or a
verdict over them describes the profiler, not the job: a short window on an
input pipeline with a cheap step turned "not input-bound" (4%) into "highly
input-bound" (35%). So the summary and the slow-rank analysis leave out every
traced iteration and the one after each, and say how many.

The traced iterations are the ``(model_id, run)`` of the task record headers
(task_trace.bin's, and the calls of task_xspace.bin's; ``docs/output_format.md``);
payloads are not decoded. A record
too damaged to show its header cannot be attributed and is ignored here (the
task reports list it).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from npu_tf_profiling.raw_format import layout
from npu_tf_profiling.raw_format.task_record import FramedRecord, iter_framed_records, parse_xspace_header

TracedRuns = frozenset[tuple[int, int]]  # (model_id, run) of every task-traced iteration


def traced_runs(device_dir: Path | str) -> TracedRuns:
    """The ``(model_id, run)`` of every iteration a device's task records hold (empty without any)."""
    data = Path(device_dir) / layout.DATA_DIR
    headers = []
    if (data / layout.TASK_TRACE_FILE).is_file():
        headers += [item.header for item in iter_framed_records(data / layout.TASK_TRACE_FILE) if isinstance(item, FramedRecord)]
    if (data / layout.XSPACE_FILE).is_file():
        windows = iter_framed_records(data / layout.XSPACE_FILE, layout.XSPACE_MAGIC, parse_xspace_header)
        headers += [call for item in windows if isinstance(item, FramedRecord) for call in item.header[layout.K_CALLS]]
    return frozenset((header[layout.K_MODEL_ID], header[layout.K_RUN]) for header in headers)


def disturbed(frame: pd.DataFrame, traced: TracedRuns) -> tuple[np.ndarray, np.ndarray]:
    """Per row of a training_trace frame: (task-traced, disturbed = traced or right after a traced run).

    "Right after" is run + 1 of the same model: the run counter numbers one
    graph's iterations in the order the script ran them.
    """
    if not traced or frame.empty:
        none = np.zeros(len(frame), dtype=bool)
        return none, none.copy()
    pairs = list(zip(frame[layout.K_MODEL_ID].tolist(), frame[layout.K_RUN].tolist()))
    is_traced = np.fromiter(((m, r) in traced for m, r in pairs), dtype=bool, count=len(pairs))
    follows = np.fromiter(((m, r - 1) in traced for m, r in pairs), dtype=bool, count=len(pairs))
    return is_traced, is_traced | follows
