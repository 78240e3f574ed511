"""The SQLite tables of the two per-rank databases, and writing a database in one step.

Table and column names are torch_npu's (``ascend_pytorch_profiler_<rank>.db``,
``analysis.db``) as documented for CANN's msprof database export and read by
msprof-analyze 26.2.0; types are SQLite's. Which of our data fills each column
is documented where the rows are built (``profiler_db``, ``analysis_db``) and
in ``docs/msprof_layout.md``. Strings in the profiler database are stored once
in ``STRING_IDS`` and referenced by id (``StringIds``), as CANN does.
"""
from __future__ import annotations

import os
import sqlite3
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from npu_tf_profiling.raw_format import own_files

Columns = Sequence[tuple[str, str]]

PROFILER_TABLES: dict[str, Columns] = {
    "STRING_IDS": [("id", "INTEGER PRIMARY KEY"), ("value", "TEXT")],
    "ENUM_API_TYPE": [("id", "INTEGER PRIMARY KEY"), ("name", "TEXT")],
    "SESSION_TIME_INFO": [("startTimeNs", "INTEGER"), ("endTimeNs", "INTEGER")],
    "NPU_INFO": [("id", "INTEGER"), ("name", "TEXT")],
    "HOST_INFO": [("hostUid", "TEXT"), ("hostName", "TEXT")],
    "RANK_DEVICE_MAP": [("rankId", "INTEGER"), ("deviceId", "INTEGER")],
    "META_DATA": [("name", "TEXT"), ("value", "TEXT")],
    "STEP_TIME": [("id", "INTEGER"), ("startNs", "INTEGER"), ("endNs", "INTEGER")],
    "PYTORCH_API": [
        ("startNs", "INTEGER"), ("endNs", "INTEGER"), ("globalTid", "INTEGER"), ("connectionId", "INTEGER"),
        ("name", "INTEGER"), ("sequenceNumber", "INTEGER"), ("fwdThreadId", "INTEGER"), ("inputDtypes", "INTEGER"),
        ("inputShapes", "INTEGER"), ("callchainId", "INTEGER"), ("type", "INTEGER"),
    ],
    "CONNECTION_IDS": [("id", "INTEGER"), ("connectionId", "INTEGER")],
    "CANN_API": [
        ("startNs", "INTEGER"), ("endNs", "INTEGER"), ("type", "INTEGER"), ("globalTid", "INTEGER"),
        ("connectionId", "INTEGER"), ("name", "INTEGER"),
    ],
    "TASK": [
        ("startNs", "INTEGER"), ("endNs", "INTEGER"), ("deviceId", "INTEGER"), ("connectionId", "INTEGER"),
        ("globalTaskId", "INTEGER"), ("globalPid", "INTEGER"), ("taskType", "INTEGER"), ("contextId", "INTEGER"),
        ("streamId", "INTEGER"), ("taskId", "INTEGER"), ("modelId", "INTEGER"),
    ],
    "COMPUTE_TASK_INFO": [
        ("name", "INTEGER"), ("globalTaskId", "INTEGER"), ("blockNum", "INTEGER"), ("mixBlockNum", "INTEGER"),
        ("taskType", "INTEGER"), ("opType", "INTEGER"), ("inputFormats", "INTEGER"), ("inputDataTypes", "INTEGER"),
        ("inputShapes", "INTEGER"), ("outputFormats", "INTEGER"), ("outputDataTypes", "INTEGER"),
        ("outputShapes", "INTEGER"), ("attrInfo", "INTEGER"), ("opState", "INTEGER"), ("hf32Eligible", "INTEGER"),
    ],
    "COMMUNICATION_OP": [
        ("opName", "INTEGER"), ("startNs", "INTEGER"), ("endNs", "INTEGER"), ("connectionId", "INTEGER"),
        ("groupName", "INTEGER"), ("opId", "INTEGER"), ("relay", "INTEGER"), ("retry", "INTEGER"),
        ("dataType", "INTEGER"), ("algType", "INTEGER"), ("count", "NUMERIC"), ("opType", "INTEGER"),
        ("deviceId", "INTEGER"),
    ],
}

ANALYSIS_TABLES: dict[str, Columns] = {
    "StepTraceTime": [
        ("step", "TEXT"), ("computing", "NUMERIC"), ("communication_not_overlapped", "NUMERIC"),
        ("overlapped", "NUMERIC"), ("communication", "NUMERIC"), ("free", "NUMERIC"), ("stage", "NUMERIC"),
        ("bubble", "NUMERIC"), ("communication_not_overlapped_and_exclude_receive", "NUMERIC"), ("preparing", "NUMERIC"),
    ],
    "CommAnalyzerTime": [
        ("hccl_op_name", "TEXT"), ("group_name", "TEXT"), ("start_timestamp", "NUMERIC"), ("elapse_time", "NUMERIC"),
        ("transit_time", "NUMERIC"), ("wait_time", "NUMERIC"), ("synchronization_time", "NUMERIC"),
        ("idle_time", "NUMERIC"), ("step", "TEXT"), ("type", "TEXT"),
    ],
    "CommAnalyzerBandwidth": [
        ("hccl_op_name", "TEXT"), ("group_name", "TEXT"), ("transport_type", "TEXT"), ("transit_size", "NUMERIC"),
        ("transit_time", "NUMERIC"), ("bandwidth", "NUMERIC"), ("large_packet_ratio", "NUMERIC"),
        ("package_size", "NUMERIC"), ("count", "NUMERIC"), ("total_duration", "NUMERIC"), ("step", "TEXT"),
        ("type", "TEXT"),
    ],
    "CommAnalyzerMatrix": [
        ("hccl_op_name", "TEXT"), ("group_name", "TEXT"), ("src_rank", "TEXT"), ("dst_rank", "TEXT"),
        ("transport_type", "TEXT"), ("transit_size", "NUMERIC"), ("transit_time", "NUMERIC"), ("bandwidth", "NUMERIC"),
        ("step", "TEXT"), ("type", "TEXT"), ("op_name", "TEXT"),
    ],
}

# CANN's API levels (ENUM_API_TYPE), the ids its exports use.
API_TYPES = {
    "acl": 20000,
    "model": 15000,
    "node": 10000,
    "communication": 5500,
    "runtime": 5000,
    "op": 50001,
    "queue": 50002,
    "trace": 50003,
    "mstx": 50004,
}


class StringIds:
    """Interns strings for ``STRING_IDS``: each distinct value gets the next id, from 0."""

    def __init__(self) -> None:
        self.ids: dict[str, int] = {}

    def __call__(self, value: str) -> int:
        found = self.ids.get(value)
        if found is None:
            found = self.ids[value] = len(self.ids)
        return found

    def rows(self) -> list[tuple[int, str]]:
        return [(i, v) for v, i in self.ids.items()]


def write_database(path: Path, tables: Mapping[str, Columns], rows: Mapping[str, Iterable[Sequence[Any]]]) -> None:
    """Create every table of ``tables`` (empty where ``rows`` has none) in a new database at ``path``.

    Built under a temporary name in the same folder, then moved over ``path``:
    a reader never sees half a database, and the temporary name does not match
    the ``ascend_pytorch_profiler_<rank>.db`` pattern tools look for.
    """
    own_files.make_dir(path.parent)
    fd, tmp = own_files.create_temp(path.parent, prefix=f".{path.name}.")
    os.close(fd)
    try:
        conn = sqlite3.connect(tmp)
        try:
            # No journal, no syncs while building: the file is private until it is moved into place, and a
            # crash leaves only the temporary file. A million-step rank inserts millions of rows.
            conn.execute("PRAGMA journal_mode=OFF")
            conn.execute("PRAGMA synchronous=OFF")
            for table, columns in tables.items():
                conn.execute(f"CREATE TABLE {table} ({', '.join(f'{c} {t}' for c, t in columns)})")
                data = rows.get(table)
                if data is not None:
                    marks = ", ".join("?" * len(columns))
                    conn.executemany(f"INSERT INTO {table} VALUES ({marks})", data)
            conn.commit()
        finally:
            conn.close()
        own_files.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
