"""Offline reports built from a PROF_* folder's raw data (never imports TensorFlow).

One module per job:

* ``raw``: read ``device_<id>/info.json`` and ``data/training_trace.jsonl``
  (torn/corrupt lines skipped and warned about) into a DataFrame, with the
  Iteration ID rule (global step when usable, else the run counter);
* ``step_trace``: the msprof step-trace table (REFERENCE §4) and its CSV;
* ``step_trace_timeline``: the same table as Chrome trace events;
* ``chrome_trace``: trace-format helpers and ``validate_chrome_trace``;
* ``prof_dir``: finding/loading PROF folders; ``writer``: writing the files;
* ``summary``: per-model shares and the input-bound verdict;
* ``step_stats`` / ``task_trace``: decode ``task_trace.bin`` (StepStats
  without TensorFlow) into the per-task table; ``op_summary``: the
  task_time/op_summary/op_statistic tables; ``msprof_timeline``: the combined
  timeline, split under a size budget; ``task_reports``: writing those files;
* ``command_report`` / ``command_summary``: the CLI sub-commands.

Heavy imports are avoided here on purpose: ``import npu_tf_profiling.reports``
costs nothing until a sub-module is used.
"""
from __future__ import annotations

import importlib
from typing import Any

# Public names, loaded on first use (PEP 562) so the package import stays cheap:
# the runtime does `from npu_tf_profiling.reports import write_step_trace_reports`
# at session close, and pandas should not load before that.
_LAZY = {
    "write_step_trace_reports": "npu_tf_profiling.reports.writer",
    "write_all_reports": "npu_tf_profiling.reports.writer",
    "read_task_trace": "npu_tf_profiling.reports.task.records",
    "load_device_tasks": "npu_tf_profiling.reports.task.table",
    "task_windows": "npu_tf_profiling.reports.task.table",
    "load_prof_dir": "npu_tf_profiling.reports.prof_dir",
    "find_prof_dirs": "npu_tf_profiling.reports.prof_dir",
    "read_training_trace": "npu_tf_profiling.reports.step.records",
    "read_device": "npu_tf_profiling.reports.step.records",
    "compute_step_trace": "npu_tf_profiling.reports.step.table",
    "step_trace_events": "npu_tf_profiling.reports.step.timeline",
    "validate_chrome_trace": "npu_tf_profiling.reports.chrome_trace",
    "summarize_prof_dir": "npu_tf_profiling.reports.step.summary",
    "BadInputError": "npu_tf_profiling.reports.errors",
    "NothingFoundError": "npu_tf_profiling.reports.errors",
    "RawDataWarning": "npu_tf_profiling.reports.errors",
}
__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


def __dir__() -> list[str]:
    return sorted(list(globals()) + __all__)
