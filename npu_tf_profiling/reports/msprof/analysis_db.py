"""``analysis.db``: torch_npu's per-rank analysis tables (step breakdown, communication).

msprof-analyze's cluster analysis copies ``StepTraceTime`` into its cluster
step table and its recipes read it beside the profiler database:

* ``StepTraceTime``: the rows of ``step_trace_time.csv`` (``step`` as text,
  whole µs, 0 where unknown), so the cluster table equals ours;
* ``CommAnalyzerTime``: one row per all-reduce group of an iteration, as in
  ``communication.json`` (times in ms, ``start_timestamp`` in µs, ``step`` =
  ``step<N>``, ``type`` = ``collective``, ``group_name`` = the group hash);
* ``CommAnalyzerBandwidth`` and ``CommAnalyzerMatrix`` exist and are empty:
  we do not see bytes per link (``communication_json`` explains).
"""
from __future__ import annotations

from pathlib import Path

from npu_tf_profiling.reports.encoders.sqlite_tables import ColumnPart, Joined, Part, Same, write_database
from npu_tf_profiling.reports.msprof import comm_names
from npu_tf_profiling.reports.msprof.db_schema import ANALYSIS_TABLES
from npu_tf_profiling.reports.msprof.rank_model import RankModel
from npu_tf_profiling.reports.msprof.step_trace_time import step_values


def analysis_db_rows(model: RankModel) -> dict[str, list[Part]]:
    """The two tables, as columns (a million-step run has a million rows of each)."""
    values = step_values(model.steps)
    columns = [values[c].to_numpy(dtype="int64") for c in values.columns]
    steps_text = Joined(("", columns[0]))  # the step as text, as msprof-analyze writes it
    group = comm_names.group_hash(comm_names.WORLD_GROUP)
    ops = model.comm_ops
    start_us = ops["start_us"].to_numpy(dtype="float64")
    elapse_ms = (ops["end_us"].to_numpy(dtype="float64") - start_us) / 1000.0
    model_ids, steps, groups = (ops[c].to_numpy(dtype="int64") for c in ("model_id", "step", "group"))
    comm = ColumnPart(len(ops), [
        Joined((f"{comm_names.ALLREDUCE_OP_TYPE}_", model_ids, "_", steps, "_", groups)), Same(group),  # comm_names.op_name
        start_us, elapse_ms, elapse_ms, Same(0.0), Same(0.0), Same(0.0),
        Joined(("step", steps)), Same(comm_names.COLLECTIVE),  # comm_names.step_key
    ])
    return {"StepTraceTime": [ColumnPart(len(values), [steps_text, *columns[1:]])], "CommAnalyzerTime": [comm]}


def write_analysis_db(model: RankModel, path: Path) -> None:
    write_database(path, ANALYSIS_TABLES, analysis_db_rows(model))
