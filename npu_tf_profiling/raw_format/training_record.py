"""One training_trace record as a JSON line (``training_trace.jsonl``): the checks readers apply.

The runtime now writes binary frames (``training_frame``); this older text form is
still read (earlier runs, synthetic data, hand-made fixtures). The record (times
are microseconds since the Unix epoch) is described in ``docs/output_format.md``.
Decoding checks every field, because the file may be torn or edited.
"""
from __future__ import annotations

import math
from typing import Any, Optional

from npu_tf_profiling.raw_format import layout
from npu_tf_profiling.raw_format.errors import BadRecordError


_INT64 = (-(2**63), 2**63 - 1)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def optional_time(record: dict, key: str) -> Optional[float]:
    """A nullable timestamp: absent, null and non-finite all mean "not measured"."""
    value = record.get(key)
    if value is None:
        return None
    if not _is_number(value):
        raise BadRecordError(f"{key!r} is not a number: {value!r}")
    value = float(value)
    return value if math.isfinite(value) else None


def _pairs(record: dict, key: str) -> list[tuple[Optional[float], Optional[float]]]:
    value = record.get(key)
    if value is None:
        return []
    if not isinstance(value, list):
        raise BadRecordError(f"{key!r} is not a list of [start, end] pairs")
    out = []
    for item in value:
        if not isinstance(item, (list, tuple)) or len(item) != 2:
            raise BadRecordError(f"{key!r} holds {item!r}, not a [start, end] pair")
        pair = []
        for v in item:
            if v is None:
                pair.append(None)
            elif _is_number(v):
                pair.append(float(v) if math.isfinite(float(v)) else None)
            else:
                raise BadRecordError(f"{key!r} holds a non-number {v!r}")
        out.append((pair[0], pair[1]))
    return out


def optional_int(record: dict, key: str, required: bool) -> Optional[int]:
    value = record.get(key)
    if value is None:
        if required:
            raise BadRecordError(f"{key!r} is missing")
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        # JSON writers sometimes emit 7.0; accept integral floats only.
        if not (isinstance(value, float) and value.is_integer()):
            raise BadRecordError(f"{key!r} is not an integer: {value!r}")
        value = int(value)
    if not _INT64[0] <= value <= _INT64[1]:
        raise BadRecordError(f"{key!r} is outside the 64-bit range the writer uses")
    return value


def parse_record(obj: Any) -> dict[str, Any]:
    """Check one decoded JSON value against the record contract; return a clean row.

    Raises ``ValueError`` naming the problem. Only ``model_id``, ``run`` and a
    finite ``iteration_end`` are required: everything else may be null/absent.
    """
    if not isinstance(obj, dict):
        raise BadRecordError(f"not a JSON object: {type(obj).__name__}")
    end = optional_time(obj, layout.K_ITERATION_END)
    if end is None:
        raise BadRecordError(f"{layout.K_ITERATION_END!r} is missing or not finite")
    return {
        layout.K_MODEL_ID: optional_int(obj, layout.K_MODEL_ID, required=True),
        layout.K_RUN: optional_int(obj, layout.K_RUN, required=True),
        layout.K_STEP: optional_int(obj, layout.K_STEP, required=False),
        layout.K_FP_START: optional_time(obj, layout.K_FP_START),
        layout.K_BP_END: optional_time(obj, layout.K_BP_END),
        layout.K_ITERATION_END: end,
        layout.K_GET_NEXT: _pairs(obj, layout.K_GET_NEXT),
        layout.K_REDUCE: _pairs(obj, layout.K_REDUCE),
    }
