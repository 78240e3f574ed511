"""``ascend_pytorch_profiler_<rank>.db``: one rank's data in torch_npu's database tables.

The database is what msprof-analyze's cluster analysis and recipes read
(``cluster_time_summary``, ``slow_rank``, ...), and what its ``advisor`` and
``compare`` prefer over the text files. Times are ns since the Unix epoch.
What fills each table (``db_schema`` has the columns):

* ``STEP_TIME``: one row per iteration: id = Iteration ID, the iteration
  window (the step trace's iteration start -> Iteration End);
* ``COMMUNICATION_OP``: one row per all-reduce group of an iteration (Reduce
  Start -> End), named as in ``comm_names``, group ``hccl_world_group``, op
  type ``hcom_allReduce_``; data type, algorithm and count are not recorded
  (NULL / ``N/A``);
* ``CANN_API``: the launch of each communication op (API ``HcclAllreduce``,
  level ``communication``) and of each task (API = the op type, level
  ``node``), joined to it by ``connectionId``; on a CPU/GPU TensorFlow the
  launch is the op's own execution, so it carries the op's times;
* ``TASK`` + ``COMPUTE_TASK_INFO``: one row per task_trace task that is not a
  collective (those are in ``COMMUNICATION_OP``): op name and type, our Task
  Type, stream, Model ID, ``opState`` ``static`` (graph mode, see
  ``kernel_details``); Ascend kernel properties (block counts, shapes, formats,
  HF32) are ``N/A`` / NULL. Empty where task_trace did not run;
* ``TASK`` also holds one ``MEMCPY_ASYNC`` task per iteration for its GetNext
  span (GetNext Start -> End): the input batch handed to the step (on Ascend,
  the host-to-device transfer of the batch). msprof-analyze's
  ``cluster_time_summary`` counts these as memory copies (its ``memory``
  column), and fails without any (26.2.0), so a job without a detected
  GetNext (``feed_dict`` input) cannot run that recipe;
* ``PYTORCH_API``: one ``ProfilerStep#<step>`` row per iteration (level
  ``op``), the step marker torch_npu's tools look for; ``CONNECTION_IDS``
  exists and is empty (no framework-to-task links). There is no
  ``COMMUNICATION_TASK_INFO``: we record no per-link communication tasks;
* ``RANK_DEVICE_MAP`` (rank, device), ``HOST_INFO`` (host uid = a hash of the
  host name, host name), ``NPU_INFO`` (device id, device kind),
  ``SESSION_TIME_INFO`` (the recorded time range), ``META_DATA`` (our and
  TensorFlow's versions, ``parallel_group_info`` when the job size is known),
  ``ENUM_API_TYPE`` (CANN's API levels), ``STRING_IDS``;
* ``MSTX_EVENTS``, only where the job recorded mstx ranges (``mstx_events``).
"""
from __future__ import annotations

import hashlib
import json
from itertools import repeat
from pathlib import Path
from typing import Any, Iterator

import numpy as np

from npu_tf_profiling.reports.cluster import step_table as cst
from npu_tf_profiling.raw_format.mstx_markers import Marker
from npu_tf_profiling.reports.msprof import comm_names, mstx_events, profiler_info
from npu_tf_profiling.reports.encoders.sqlite_tables import ColumnPart, Part, Same, write_database
from npu_tf_profiling.reports.msprof.db_schema import API_TYPES, PROFILER_TABLES, StringIds
from npu_tf_profiling.reports.msprof.kernel_details import NA, OP_STATE_STATIC
from npu_tf_profiling.reports.msprof.rank_model import (
    END_US,
    GETNEXT_END_US,
    GETNEXT_START_US,
    START_US,
    RankModel,
    is_communication_task,
)

MEMCPY_TASK_TYPE = "MEMCPY_ASYNC"
Tables = dict[str, list[Part]]  # table -> its parts, in order (encoders.sqlite_tables)


def host_uid(host: str) -> str:
    """A stable numeric id of a host name (CANN's hostUid is a number, as text)."""
    return str(int.from_bytes(hashlib.sha256(host.encode("utf-8")).digest()[:8], "big") >> 1)


def _ns(values_us: np.ndarray) -> np.ndarray:
    """Whole-µs floats to int64 ns, exactly as ``us_to_ns`` (half-way values round to even, like ``round``)."""
    return np.rint(values_us).astype(np.int64) * 1000


def _steps(model: RankModel, strings: StringIds, rows: Tables) -> None:
    tid = model.pid << 32
    steps = model.steps[cst.STEP].to_numpy(dtype="int64")
    start = model.steps[START_US].to_numpy(dtype="float64")
    end = model.steps[END_US].to_numpy(dtype="float64")
    known = ~(np.isnan(start) | np.isnan(end))
    steps, start_ns, end_ns = steps[known], _ns(start[known]), _ns(end[known])
    names = strings.joined("ProfilerStep#", steps)
    rows["STEP_TIME"] = [ColumnPart(len(steps), [steps, start_ns, end_ns])]
    rows["PYTORCH_API"] = [ColumnPart(len(steps), [start_ns, end_ns, Same(tid), Same(None), names,
                                                   *repeat(Same(None), 5), Same(API_TYPES["op"])])]


def _communication(model: RankModel, strings: StringIds, rows: Tables, next_connection: int) -> int:
    group = strings(comm_names.WORLD_GROUP)
    op_type = strings(comm_names.ALLREDUCE_OP_TYPE)
    api = strings(comm_names.ALLREDUCE_API)
    na = strings(NA)
    tid = model.pid << 32
    ops = model.comm_ops
    count = len(ops)
    start_ns = _ns(ops["start_us"].to_numpy(dtype="float64"))
    end_ns = _ns(ops["end_us"].to_numpy(dtype="float64"))
    model_ids, steps, groups = (ops[c].to_numpy(dtype="int64") for c in ("model_id", "step", "group"))
    names = strings.joined(f"{comm_names.ALLREDUCE_OP_TYPE}_", model_ids, "_", steps, "_", groups)  # comm_names.op_name
    connections = np.arange(next_connection, next_connection + count, dtype=np.int64)
    rows["COMMUNICATION_OP"] = [ColumnPart(count, [
        names, start_ns, end_ns, connections, Same(group), np.arange(count, dtype=np.int64), Same(0), Same(0), Same(None),
        Same(na), Same(None), Same(op_type), Same(model.rank)])]
    rows["CANN_API"] = [ColumnPart(count, [start_ns, end_ns, Same(API_TYPES["communication"]), Same(tid), connections, Same(api)])]
    return next_connection + count


def _tasks(model: RankModel, strings: StringIds, rows: Tables, next_connection: int) -> int:
    """The task_trace tasks (``globalTaskId`` = the task's index, as kernel_details' Task ID); returns the count."""
    tasks = model.tasks
    if tasks is None or not len(tasks):
        return 0
    na = strings(NA)
    static = strings(OP_STATE_STATIC)
    tid = model.pid << 32
    task_api: list[tuple[Any, ...]] = []
    task_rows: list[tuple[Any, ...]] = []
    info_rows: list[tuple[Any, ...]] = []
    rows["CANN_API"].append(task_api)
    rows["TASK"].append(task_rows)
    rows["COMPUTE_TASK_INFO"].append(info_rows)
    columns = zip(
        tasks["name"].tolist(), tasks["op_type"].tolist(), tasks["task_type"].tolist(),
        tasks["stream_id"].tolist(), tasks["model_id"].tolist(), tasks["start_ns"].tolist(), tasks["end_ns"].tolist(),
    )
    for task_id, (name, op_type, task_type, stream, model_id, start, end) in enumerate(columns):
        if is_communication_task(task_type):
            continue
        connection = next_connection + task_id
        kind = strings(task_type)
        task_rows.append((start, end, model.rank, connection, task_id, model.pid, kind, None, stream, task_id, model_id))
        info_rows.append(
            (strings(name), task_id, None, None, kind, strings(op_type), na, na, na, na, na, na, na, static, na)
        )
        task_api.append((start, end, API_TYPES["node"], tid, connection, strings(op_type)))
    return len(tasks)


def _data_input(model: RankModel, strings: StringIds, rows: Tables, first_id: int, next_connection: int) -> None:
    """One ``MEMCPY_ASYNC`` task per iteration's GetNext span: the input batch handed to the step."""
    kind = strings(MEMCPY_TASK_TYPE)
    model_ids, start, end = (model.steps[c].to_numpy(dtype="float64") for c in (cst.MODEL_ID, GETNEXT_START_US, GETNEXT_END_US))
    with np.errstate(invalid="ignore"):
        known = ~(np.isnan(start) | np.isnan(end)) & (end >= start)
    count = int(known.sum())
    task_ids = np.arange(first_id, first_id + count, dtype=np.int64)
    rows["TASK"].append(ColumnPart(count, [
        _ns(start[known]), _ns(end[known]), Same(model.rank), np.arange(next_connection, next_connection + count, dtype=np.int64),
        task_ids, Same(model.pid), Same(kind), Same(None), Same(None), task_ids, model_ids[known].astype(np.int64)]))


def _meta(model: RankModel) -> list[tuple[str, str]]:
    meta = [("npu_tf_profiling_version", profiler_info.our_version())]
    tf_version = model.info.tensorflow_version
    if tf_version is not None:
        meta.append(("tensorflow_version", tf_version))
    groups = profiler_info.parallel_group_info(model)
    if groups is not None:
        meta.append(("parallel_group_info", json.dumps(groups)))
    return meta


def _no_rows() -> Tables:
    return {table: [] for table in (*PROFILER_TABLES, mstx_events.TABLE)}


def _filled(rows: Tables) -> Iterator[tuple[str, list[Part]]]:
    return ((table, parts) for table, parts in rows.items() if parts)


def profiler_db_parts(model: RankModel, ranges: list[Marker]) -> Iterator[tuple[str, list[Part]]]:
    """Every table's rows for one rank as (table, parts) pairs, one group of tables at a time: each group's
    columns are built, written and dropped before the next is built (a million-iteration rank's tables
    held at once were 150 MiB); STRING_IDS, which every group adds to, comes last."""
    strings = StringIds()
    rows = _no_rows()
    _steps(model, strings, rows)
    yield from _filled(rows)
    rows = _no_rows()  # the previous group's columns are dropped once written
    next_connection = _communication(model, strings, rows, 0)
    yield from _filled(rows)
    rows = _no_rows()
    n_tasks = _tasks(model, strings, rows, next_connection)
    yield from _filled(rows)
    rows = _no_rows()
    _data_input(model, strings, rows, n_tasks, next_connection + n_tasks)
    mstx_events.add_marker_rows(ranges, model, strings, rows)  # MSTX_EVENTS, only for a rank with mstx ranges
    yield from _filled(rows)
    start_ns, end_ns = model.time_range_ns()
    yield "SESSION_TIME_INFO", [[(start_ns, end_ns)]]
    yield "NPU_INFO", [[(model.rank, model.device_kind)]]
    yield "HOST_INFO", [[(host_uid(model.host), model.host)]]
    yield "RANK_DEVICE_MAP", [[(model.rank, model.rank)]]
    yield "META_DATA", [_meta(model)]
    yield "ENUM_API_TYPE", [[(i, name) for name, i in API_TYPES.items()]]
    yield "STRING_IDS", strings.table


def write_profiler_db(model: RankModel, path: Path) -> None:
    ranges = mstx_events.ranges_of(model)
    tables = {**PROFILER_TABLES, mstx_events.TABLE: mstx_events.COLUMNS} if ranges else PROFILER_TABLES
    rows_hint = 4 * len(model.steps) + 2 * len(model.comm_ops) + (0 if model.tasks is None else 3 * len(model.tasks))
    write_database(path, tables, profiler_db_parts(model, ranges), rows_hint)
