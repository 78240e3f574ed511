"""Read a device's task records into columns (one entry per StepStats node).

The raw format is defined in ``npu_tf_profiling.raw_format.layout``: framed records
(``raw_format.task_record``) in two files. ``task_trace.bin`` holds one per traced
Session iteration, its payload a serialized StepStats; ``task_xspace.bin`` one per
TensorFlow 2 task window, its payload tf.profiler's XSpace, which ``xspace`` turns
into one StepStats per call. From here on both are the same iterations.
Decoding needs no TensorFlow (``step_stats`` and ``xspace`` declare the messages).

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
from typing import Any, Iterator, Optional, Sequence, Union

import numpy as np
import pandas as pd
from google.protobuf.message import DecodeError

from npu_tf_profiling.raw_format import layout
from npu_tf_profiling.raw_format.errors import RawDataWarning
from npu_tf_profiling.raw_format.metadata import read_json_object
from npu_tf_profiling.raw_format.task_record import FramedRecord, SkippedRecord, iter_framed_records, parse_xspace_header
from npu_tf_profiling.reports.task import step_stats, xspace
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

    paths: list[Path]
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


def iteration_records(path: Path, training_frame: Optional[pd.DataFrame] = None) -> Iterator[Union[tuple[int, dict[str, Any], Any], SkippedRecord]]:
    """(offset, task_trace header, StepStats message) per traced iteration of one file, or what was skipped.

    An xspace record gives one item per call of its window, all at the record's offset; its clock is
    aligned to the step trace's stamps in ``training_frame`` (``TraceRead.frame``) when given.
    """
    if path.name != layout.XSPACE_FILE:
        for item in iter_framed_records(path):
            if isinstance(item, SkippedRecord):
                yield item
                continue
            try:
                yield item.offset, item.header, step_stats.parse_step_stats(item.payload)
            except DecodeError as exc:
                yield SkippedRecord(item.offset, f"payload is not a StepStats message ({exc})")
        return
    for item in iter_framed_records(path, layout.XSPACE_MAGIC, parse_xspace_header):
        if isinstance(item, FramedRecord):
            calls = item.header[layout.K_CALLS]
            spans = [(c[layout.K_RUN_START], c[layout.K_RUN_END]) for c in calls]
            marks = None
            if training_frame is not None and spans:
                marks = xspace.clock_marks(training_frame, (min(s for s, _ in spans), max(e for _, e in spans)))
            try:
                stats = xspace.calls_step_stats(bytes(item.payload), item.header[layout.K_ANCHORS], spans, marks)
            except (DecodeError, ValueError) as exc:
                item = SkippedRecord(item.offset, f"payload is not a usable XSpace ({exc}); {len(calls)} iteration(s) lost")
            else:
                yield from ((item.offset, call, message) for call, message in zip(calls, stats))
                continue
        yield item


class _Columns:
    """The columns read_task_trace builds, record by record, across files."""

    def __init__(self) -> None:
        self.name_codes: dict[str, int] = {}
        self.labels: list[str] = []
        self.device_codes: dict[str, int] = {}
        self.thread_names: dict[tuple[int, int], str] = {}
        self.rec_rows: list[tuple] = []
        self.parts: dict[str, list[np.ndarray]] = {k: [] for k in _NODE_DTYPES}

    def add(self, offset: int, header: dict[str, Any], message: Any) -> None:
        record = len(self.rec_rows)
        has_gpu = False
        for dev in message.dev_stats:
            cols = step_stats.device_nodes(dev, self.name_codes)
            for _code, index in cols.new_names:
                self.labels.append(cols.nodes[index].timeline_label)
            dcode = self.device_codes.setdefault(cols.device, len(self.device_codes))
            has_gpu = has_gpu or is_gpu_device(cols.device)
            for tid, tname in cols.thread_names.items():
                self.thread_names[(dcode, int(tid))] = tname
            n = cols.name_code.shape[0]
            for key, values in (("record", np.full(n, record, dtype=np.int32)), ("device", np.full(n, dcode, dtype=np.int32)),
                                ("thread", cols.thread_id), ("name", cols.name_code), ("start_ns", cols.start_ns),
                                ("end_ns", cols.end_ns)):
                self.parts[key].append(values)
        h = header
        self.rec_rows.append((record, offset, h[layout.K_MODEL_ID], h[layout.K_RUN], h[layout.K_STEP],
                              h[layout.K_RUN_START], h[layout.K_RUN_END], has_gpu))


_NODE_DTYPES = {"record": np.int32, "device": np.int32, "thread": np.int64, "name": np.int32, "start_ns": np.int64, "end_ns": np.int64}


def _in_code_order(codes: dict[str, int]) -> list[str]:
    names = [""] * len(codes)
    for name, code in codes.items():
        names[code] = name
    return names


def read_task_trace(paths: Union[Path, str, Sequence[Union[Path, str]]], training_frame: Optional[pd.DataFrame] = None) -> TaskTrace:
    """Decode task record files (one, or a device's ``layout.task_trace_files``) into one ``TaskTrace``;
    torn/corrupt parts are skipped with a warning per file. ``training_frame``: the same device's
    training trace, whose stamps place TensorFlow 2 windows on the step trace's clock."""
    paths = [Path(p) for p in ([paths] if isinstance(paths, (str, Path)) else paths)]
    columns = _Columns()
    skipped: list[SkippedRecord] = []
    for path in paths:
        skipped_here = []
        for item in iteration_records(path, training_frame):
            if isinstance(item, SkippedRecord):
                skipped_here.append(item)
            else:
                columns.add(*item)
        if skipped_here:
            _warn_skipped(path, skipped_here)
        skipped += skipped_here
    arrays = {k: (np.concatenate(v) if v else np.zeros(0, dtype=_NODE_DTYPES[k])) for k, v in columns.parts.items()}
    records = pd.DataFrame(columns.rec_rows, columns=RECORD_COLUMNS)
    records = records.astype(
        {"record": "int64", "offset": "int64", layout.K_MODEL_ID: "int64", layout.K_RUN: "int64", layout.K_STEP: "Int64",
         layout.K_RUN_START: "float64", layout.K_RUN_END: "float64", "has_gpu": bool}
    )
    return TaskTrace(
        paths=paths, records=records, names=_in_code_order(columns.name_codes), devices=_in_code_order(columns.device_codes),
        labels=columns.labels, thread_names=columns.thread_names, skipped=skipped, **arrays,
    )


def read_graph_ops(device_dir: Union[Path, str], model_id: int) -> dict[str, str]:
    """``data/graph_ops_<model_id>.json`` ({op name: op type}); {} with a warning if absent or unreadable."""
    path = Path(device_dir) / layout.DATA_DIR / layout.GRAPH_OPS_FILE.format(model_id=model_id)
    data = read_json_object(path, "op types come from the timeline labels") or {}
    return {str(k): str(v) for k, v in data.items() if isinstance(v, str)}
