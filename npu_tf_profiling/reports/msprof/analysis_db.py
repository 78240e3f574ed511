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
from typing import Any

from npu_tf_profiling.reports.msprof import comm_names
from npu_tf_profiling.reports.msprof.db_schema import ANALYSIS_TABLES, write_database
from npu_tf_profiling.reports.msprof.rank_model import RankModel
from npu_tf_profiling.reports.msprof.step_trace_time import step_values


def analysis_db_rows(model: RankModel) -> dict[str, list[tuple[Any, ...]]]:
    values = step_values(model.steps)
    step_rows = [(str(row[0]), *(int(v) for v in row[1:])) for row in values.itertuples(index=False)]
    group = comm_names.group_hash(comm_names.WORLD_GROUP)
    comm_rows = []
    for op in model.comm_ops.itertuples(index=False):
        elapse_ms = (float(op.end_us) - float(op.start_us)) / 1000.0
        comm_rows.append(
            (comm_names.op_name(int(op.model_id), int(op.step), int(op.group)), group, float(op.start_us), elapse_ms,
             elapse_ms, 0.0, 0.0, 0.0, comm_names.step_key(int(op.step)), comm_names.COLLECTIVE)
        )
    return {"StepTraceTime": step_rows, "CommAnalyzerTime": comm_rows}


def write_analysis_db(model: RankModel, path: Path) -> None:
    write_database(path, ANALYSIS_TABLES, analysis_db_rows(model))
