"""Offline reports built from a PROF_* folder's raw data (never imports TensorFlow).

One sub-package per kind of data, one module per job in each:

* ``step/``: ``records`` (training_trace.bin/.jsonl -> DataFrame, torn records skipped
  and warned about, the Iteration ID rule), ``table`` (the step_trace table and
  its CSV), ``timeline`` (the same as Chrome trace events), ``summary`` (shares
  and the input-bound verdict);
* ``task/``: ``step_stats`` (StepStats decoded without TensorFlow),
  ``records`` (task_trace.bin -> columns), ``classify`` (which nodes are
  tasks, of which kind), ``table`` (the per-task table), ``op_summary``
  (task_time / op_summary / op_statistic), ``timeline`` (the combined msprof
  timeline, split under a size budget), ``files`` (writing them);
* ``cluster/``: ``data`` (every rank of a job), ``step_table`` (msprof-analyze's
  cluster step trace), ``slow_rank/`` (one analyzer per question, the verdict),
  ``timeline`` (all ranks on one clock), ``analysis`` (writing the files);
* ``view/``: ``npu-tf-prof view``'s offline charts page (plotly, an optional
  dependency, loaded only there);
* ``commands/``: the ``report``, ``summary``, ``cluster``, ``view`` and
  ``tensorboard`` sub-commands;
* ``exporters/``: one module per output of ``report`` behind one interface
  (step trace, task files, msprof-analyze folders, TensorBoard scalars);
* ``encoders/``: the writers' inner loops on columns (SQLite tables, integer
  CSVs), through Arrow when the ``fast`` extra is installed, ``chrome_trace``
  (trace-format helpers) and ``trace_slices`` (a timeline streamed to disk,
  sliced as CANN does above the slice size);
* flat: ``prof_dir`` (finding and loading PROF folders), ``writer`` (all the
  reports of one PROF folder), ``job_reports`` (what the training process
  itself builds: bounded, nothing for a long run), ``report_paths``,
  ``run_input``, ``anomalies``, ``live``, ``errors``.

The format of every file is in ``docs/output_format.md``.
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
    "validate_chrome_trace": "npu_tf_profiling.reports.encoders.chrome_trace",
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
