"""Read ``device_<id>/data/task_trace.bin`` into columns (one entry per StepStats node).

The raw format is defined in ``npu_tf_profiling.raw_format.layout``: framed records, one
per traced iteration, each ``TASK_MAGIC | uint32 LE header length | header
(UTF-8 JSON) | uint64 LE payload length | payload (serialized StepStats)``.
Decoding needs no TensorFlow (``step_stats`` declares the messages).

Reading never trusts the end of the file and never drops anything silently:
a torn last record (the process was killed mid-write), bytes that do not
start with the marker (the reader skips to the next marker), a header that is
not the contract's JSON or a payload that is not a StepStats are each listed
with their byte offset in a ``RawDataWarning`` and kept in ``TaskTrace.skipped``.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Optional, Union

import numpy as np
import pandas as pd
from google.protobuf.message import DecodeError

from npu_tf_profiling.raw_format import layout
from npu_tf_profiling.raw_format.errors import RawDataWarning
from npu_tf_profiling.raw_format.metadata import read_json_object
from npu_tf_profiling.raw_format.task_record import SkippedRecord, iter_framed_records
from npu_tf_profiling.reports.task import step_stats
from npu_tf_profiling.reports.task.classify import is_gpu_device, op_type_from_label

_MAX_IN_WARNING = 10


@dataclass
class TaskTrace:
    """Every node of every usable record of one task_trace.bin, as columns.

    ``records`` has one row per record (``record`` = its position in this
    frame): model_id, run, step, run_start_us, run_end_us, offset, has_gpu.
    Per node: ``record``, ``device`` (code into ``devices``), ``thread``,
    ``name`` (code into ``names``), ``start_ns``/``end_ns`` (epoch ns).
    ``labels`` holds, per name code, the timeline_label of the name's first
    occurrence (parsed by ``label_type`` only for names graph_ops lacks).
    """

    path: Path
    records: pd.DataFrame
    names: list[str]
    devices: list[str]
    labels: list[str]
    thread_names: dict[tuple[int, int], str]
    record: np.ndarray
    device: np.ndarray
    thread: np.ndarray
    name: np.ndarray
    start_ns: np.ndarray
    end_ns: np.ndarray
    skipped: list[SkippedRecord] = field(default_factory=list)

    @property
    def node_count(self) -> int:
        return int(self.name.shape[0])

    def label_type(self, code: int) -> Optional[str]:
        """The op type in the first timeline_label of name ``code`` (None when unparseable)."""
        return op_type_from_label(self.labels[code], self.names[code])


RECORD_COLUMNS = ["record", "offset", layout.K_MODEL_ID, layout.K_RUN, layout.K_STEP, layout.K_RUN_START, layout.K_RUN_END, "has_gpu"]


def _warn_skipped(path: Path, skipped: list[SkippedRecord]) -> None:
    shown = "; ".join(f"offset {s.offset}: {s.reason}" for s in skipped[:_MAX_IN_WARNING])
    more = len(skipped) - _MAX_IN_WARNING
    if more > 0:
        shown += f"; and {more} more"
    warnings.warn(f"{path}: skipped {len(skipped)} unusable part(s) ({shown})", RawDataWarning, stacklevel=3)


def read_task_trace(path: Union[Path, str]) -> TaskTrace:
    """Decode a task_trace.bin into a ``TaskTrace`` (torn/corrupt parts skipped with a warning)."""
    path = Path(path)
    name_codes: dict[str, int] = {}
    labels: list[str] = []
    device_codes: dict[str, int] = {}
    thread_names: dict[tuple[int, int], str] = {}
    rec_rows: list[tuple] = []
    parts: dict[str, list[np.ndarray]] = {k: [] for k in ("record", "device", "thread", "name", "start_ns", "end_ns")}
    skipped: list[SkippedRecord] = []
    for item in iter_framed_records(path):
        if isinstance(item, SkippedRecord):
            skipped.append(item)
            continue
        try:
            message = step_stats.parse_step_stats(item.payload)
        except DecodeError as exc:
            skipped.append(SkippedRecord(item.offset, f"payload is not a StepStats message ({exc})"))
            continue
        record = len(rec_rows)
        has_gpu = False
        for dev in message.dev_stats:
            cols = step_stats.device_nodes(dev, name_codes)
            for code, index in cols.new_names:
                labels.append(cols.nodes[index].timeline_label)
            dcode = device_codes.setdefault(cols.device, len(device_codes))
            has_gpu = has_gpu or is_gpu_device(cols.device)
            for tid, tname in cols.thread_names.items():
                thread_names[(dcode, int(tid))] = tname
            n = cols.name_code.shape[0]
            parts["record"].append(np.full(n, record, dtype=np.int32))
            parts["device"].append(np.full(n, dcode, dtype=np.int32))
            parts["thread"].append(cols.thread_id)
            parts["name"].append(cols.name_code)
            parts["start_ns"].append(cols.start_ns)
            parts["end_ns"].append(cols.end_ns)
        h = item.header
        rec_rows.append((record, item.offset, h[layout.K_MODEL_ID], h[layout.K_RUN], h[layout.K_STEP], h[layout.K_RUN_START], h[layout.K_RUN_END], has_gpu))
    if skipped:
        _warn_skipped(path, skipped)
    dtypes = {"record": np.int32, "device": np.int32, "thread": np.int64, "name": np.int32, "start_ns": np.int64, "end_ns": np.int64}
    arrays = {k: (np.concatenate(v) if v else np.zeros(0, dtype=dtypes[k])) for k, v in parts.items()}
    records = pd.DataFrame(rec_rows, columns=RECORD_COLUMNS)
    records = records.astype(
        {"record": "int64", "offset": "int64", layout.K_MODEL_ID: "int64", layout.K_RUN: "int64", layout.K_STEP: "Int64",
         layout.K_RUN_START: "float64", layout.K_RUN_END: "float64", "has_gpu": bool}
    )
    names = [""] * len(name_codes)
    for name, code in name_codes.items():
        names[code] = name
    devices = [""] * len(device_codes)
    for dev_name, code in device_codes.items():
        devices[code] = dev_name
    return TaskTrace(
        path=path, records=records, names=names, devices=devices, labels=labels,
        thread_names=thread_names, skipped=skipped, **arrays,
    )


def read_graph_ops(device_dir: Union[Path, str], model_id: int) -> dict[str, str]:
    """``data/graph_ops_<model_id>.json`` ({op name: op type}); {} with a warning if absent or unreadable."""
    path = Path(device_dir) / layout.DATA_DIR / layout.GRAPH_OPS_FILE.format(model_id=model_id)
    data = read_json_object(path, "op types come from the timeline labels") or {}
    return {str(k): str(v) for k, v in data.items() if isinstance(v, str)}
