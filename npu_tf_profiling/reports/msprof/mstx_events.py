"""The mstx ranges in the profiler database's ``MSTX_EVENTS``, so msprof-analyze's ``mstx_sum`` recipe reads them.

msprof-analyze 26.2 (``prof_exports/mstx_event_export.py``) reads ranges as ``eventType = 2`` rows whose
``message`` is a ``STRING_IDS`` id, and joins each to a ``TASK`` row by ``connectionId`` for its device-side
times. On Ascend the range's marker task runs on a device stream; here a range runs on the host, which is
also where its work ran, so its ``TASK`` row carries the range's own times (task type ``MSTX_RANGE``, no
``COMPUTE_TASK_INFO``: it is not a computation). Each range falls in the ``STEP_TIME`` row holding its start.

Marks (instants) are left out of the database: the recipe reads them only as torch_npu's ``<name>_start`` /
``<name>_stop`` pairs tied to ``PYTORCH_API`` rows, which a TensorFlow job has no equivalent for; they are in
``host_trace_<ts>.json``. The table is created only for a rank that recorded markers, so other ranks' databases
(and the golden files) keep their schema.
"""
from __future__ import annotations

from typing import Any

from npu_tf_profiling.raw_format import layout
from npu_tf_profiling.raw_format.mstx_markers import Marker, read_markers
from npu_tf_profiling.reports.msprof.db_schema import Columns, StringIds
from npu_tf_profiling.reports.msprof.rank_model import RankModel, us_to_ns

TABLE = "MSTX_EVENTS"
COLUMNS: Columns = [
    ("startNs", "INTEGER"), ("endNs", "INTEGER"), ("eventType", "INTEGER"), ("rangeId", "INTEGER"),
    ("category", "INTEGER"), ("message", "INTEGER"), ("globalTid", "INTEGER"), ("endGlobalTid", "INTEGER"),
    ("domainId", "INTEGER"), ("connectionId", "INTEGER"),
]
RANGE_EVENT = 2  # msprof-analyze's eventType for a range (3 is a mark)
TASK_TYPE = "MSTX_RANGE"
# Ids beyond every task and connection the other tables number from 0, so a range never joins to an op.
FIRST_ID = 1 << 40


def ranges_of(model: RankModel) -> list[Marker]:
    """The rank's mstx ranges ([] when it recorded none: then no MSTX_EVENTS table)."""
    return [m for m in read_markers(layout.device_dir(model.prof_dir, model.rank)) if m.kind == "range"]


def add_marker_rows(ranges: list[Marker], model: RankModel, strings: StringIds, rows: dict[str, Any]) -> bool:
    """Add ``ranges`` to ``rows`` (``MSTX_EVENTS`` and their ``TASK`` rows); False when there are none."""
    if not ranges:
        return False
    kind = strings(TASK_TYPE)
    events, tasks = [], []
    for i, marker in enumerate(ranges):
        start, end = us_to_ns(marker.start_us), us_to_ns(marker.end_us)
        tid = (model.pid << 32) | (marker.tid & 0xFFFFFFFF)
        connection = FIRST_ID + i
        events.append((start, end, RANGE_EVENT, i, None, strings(marker.message), tid, tid, strings(marker.domain), connection))
        tasks.append((start, end, model.rank, connection, FIRST_ID + i, model.pid, kind, None, None, FIRST_ID + i, None))
    rows[TABLE] = [events]
    rows["TASK"].append(tasks)
    return True
