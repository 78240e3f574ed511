"""The SQLite tables of the two per-rank databases, and the string ids of the profiler database.

Table and column names are torch_npu's (``ascend_pytorch_profiler_<rank>.db``,
``analysis.db``) as documented for CANN's msprof database export and read by
msprof-analyze 26.2.0; types are SQLite's. Which of our data fills each column
is documented where the rows are built (``profiler_db``, ``analysis_db``) and
in ``docs/msprof_layout.md``. Strings in the profiler database are stored once
in ``STRING_IDS`` and referenced by id (``StringIds``), as CANN does. The
databases are written by ``encoders.sqlite_tables``.
"""
from __future__ import annotations

import numpy as np

from npu_tf_profiling.reports.encoders.sqlite_tables import ColumnPart, Columns, Joined, Part

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
    """Interns strings for ``STRING_IDS``: each distinct value gets the next id, from 0, in the order first met.

    ``joined`` interns a whole column of texts built from numbers (a million
    ``ProfilerStep#<n>``) at numpy speed: only the distinct rows get ids, and
    their texts are built by the writer (``Joined``), never one by one here.
    The ids equal those of interning each text in turn: a family's texts are
    told apart by their numbers, and a text that could already be known (same
    prefix) is interned one by one instead.
    """

    def __init__(self) -> None:
        self.ids: dict[str, int] = {}
        self.count = 0
        self.table: list[Part] = []  # STRING_IDS' rows in id order: lists of (id, text) and joined blocks
        self._blocks: list[tuple[str, ColumnPart]] = []  # (prefix, block) not yet in ``ids``

    def __call__(self, value: str) -> int:
        found = self.ids.get(value)
        if found is None and any(value.startswith(prefix) for prefix, _ in self._blocks):
            self._index_blocks()
            found = self.ids.get(value)
        if found is None:
            found = self.ids[value] = self.count
            self.count += 1
            if not self.table or isinstance(self.table[-1], ColumnPart):
                self.table.append([])
            self.table[-1].append((found, value))  # type: ignore[union-attr]
        return found

    def joined(self, prefix: str, *pieces: str | np.ndarray) -> np.ndarray:
        """The ids of ``prefix`` + pieces per row (``Joined``); numbers must be split by non-digit text."""
        arrays = [p for p in pieces if not isinstance(p, str)]
        for before, after in zip(pieces, pieces[1:]):
            if not isinstance(before, str) and not (isinstance(after, str) and after and not any(c in after for c in "-0123456789")):
                raise ValueError("joined: two numbers must be split by text without digits or '-', or two rows share a text")
        clash = any(v.startswith(prefix) for v in self.ids) or any(p.startswith(prefix) or prefix.startswith(p) for p, _ in self._blocks)
        if clash or not arrays:
            texts = Joined((prefix, *pieces)).texts(0, len(arrays[0]) if arrays else 1)
            return np.array([self(text) for text in texts], dtype=np.int64)
        keys = np.stack([np.asarray(a, dtype=np.int64) for a in arrays], axis=1)
        unique, first, inverse = np.unique(keys, axis=0, return_index=True, return_inverse=True)
        order = np.argsort(first, kind="stable")
        rank = np.empty_like(order)
        rank[order] = np.arange(len(order))
        ids = self.count + np.arange(len(order), dtype=np.int64)
        columns = iter(unique[order].T)
        block = ColumnPart(len(order), [ids, Joined((prefix, *(p if isinstance(p, str) else next(columns) for p in pieces)))])
        self.table.append(block)
        self._blocks.append((prefix, block))
        self.count += len(order)
        return self.count - len(order) + rank[inverse.reshape(-1)].astype(np.int64)

    def _index_blocks(self) -> None:
        """Put the joined texts in ``ids`` (only when a later single text shares their prefix)."""
        for _, block in self._blocks:
            ids, texts = block.columns
            self.ids.update(zip(texts.texts(0, block.length), ids.tolist()))  # type: ignore[union-attr]
        self._blocks.clear()
