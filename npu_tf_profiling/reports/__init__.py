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
* ``command_report`` / ``command_summary``: the CLI sub-commands.

Heavy imports are avoided here on purpose: ``import npu_tf_profiling.reports``
costs nothing until a sub-module is used.
"""
