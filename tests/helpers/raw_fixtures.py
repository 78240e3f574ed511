"""Synthesise PROF_* folders with raw training_trace data, without TensorFlow.

Tests of the reports build exactly the raw records they need here, so every
formula can be checked against numbers the test itself chose.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Optional, Sequence

from npu_tf_profiling.raw_format import layout

T0 = 1_700_000_000_000_000.0  # µs since the epoch, Nov 2023
PROF_TS = "20240102030405"


def record(
    model_id: int = 1,
    run: int = 1,
    iteration_end: float = T0 + 1000,
    fp_start: Optional[float] = T0 + 100,
    bp_end: Optional[float] = T0 + 800,
    step: Optional[int] = None,
    get_next: Sequence[Sequence[Optional[float]]] = (),
    reduce: Sequence[Sequence[Optional[float]]] = (),
) -> dict[str, Any]:
    """One training_trace record, with the layout's keys."""
    return {
        layout.K_MODEL_ID: model_id,
        layout.K_RUN: run,
        layout.K_STEP: step,
        layout.K_GET_NEXT: [list(p) for p in get_next],
        layout.K_FP_START: fp_start,
        layout.K_BP_END: bp_end,
        layout.K_REDUCE: [list(p) for p in reduce],
        layout.K_ITERATION_END: iteration_end,
    }


@dataclass
class Phases:
    """Durations (µs) of one synthetic iteration, laid end to end."""

    data_aug: float = 100.0  # previous end -> fp start
    get_next: Optional[float] = 40.0  # inside data_aug, ending 10 µs before fp start
    fp_bp: float = 700.0
    refresh: float = 200.0
    reduces: Sequence[tuple[float, float]] = field(default_factory=tuple)  # (offset after fp, duration)


def iterations(
    n: int,
    model_id: int = 1,
    start: float = T0,
    phases: Optional[Phases] = None,
    with_step: bool = False,
    step0: int = 0,
) -> list[dict[str, Any]]:
    """``n`` back-to-back iterations of one model following ``phases``."""
    ph = phases or Phases()
    out = []
    prev_end = start
    for i in range(1, n + 1):
        fp = prev_end + ph.data_aug
        bp = fp + ph.fp_bp
        end = bp + ph.refresh
        gn = [] if ph.get_next is None else [[fp - 10 - ph.get_next, fp - 10]]
        red = [[fp + off, fp + off + dur] for off, dur in ph.reduces]
        out.append(
            record(
                model_id=model_id,
                run=i,
                step=(step0 + i) if with_step else None,
                iteration_end=end,
                fp_start=fp,
                bp_end=bp,
                get_next=gn,
                reduce=red,
            )
        )
        prev_end = end
    return out


def jsonl(records: Iterable[dict[str, Any]]) -> str:
    return "".join(json.dumps(r) + "\n" for r in records)


def make_prof_dir(
    root: Path,
    devices: dict[int, Any],
    pid: int = 4242,
    ts: str = PROF_TS,
    info: Optional[dict[str, Any]] = None,
) -> Path:
    """Create ``root/PROF_<pid>_<ts>_abcdefgh`` with one device folder per entry.

    A device's value is either a list of records or the raw text of its
    training_trace.jsonl (for torn/corrupt-line tests), or None for a device
    folder without data.
    """
    prof = root / f"{layout.PROF_DIR_PREFIX}{pid}_{ts}_abcdefgh"
    for device_id, content in devices.items():
        ddir = layout.device_dir(prof, device_id)
        (ddir / layout.DATA_DIR).mkdir(parents=True, exist_ok=True)
        (ddir / layout.INFO_FILE).write_text(json.dumps(info if info is not None else {"device_id": device_id}))
        if content is None:
            continue
        text = content if isinstance(content, str) else jsonl(content)
        layout.training_trace_path(prof, device_id).write_text(text)
    return prof


# ----- an independent re-implementation of the REFERENCE §4 rules, on CSV text -----

NA = "N/A"


def read_csv(path: Path) -> tuple[list[str], list[list[str]]]:
    """Header and rows of a step_trace CSV (positional: Reduce names repeat)."""
    import csv

    with open(path, newline="", encoding="utf-8") as handle:
        rows = list(csv.reader(handle))
    return rows[0], rows[1:]


def _num(cell: str) -> Optional[int]:
    if cell == NA:
        return None
    assert cell.lstrip("-").isdigit(), f"not an integer or N/A: {cell!r}"
    return int(cell)


def _diff(a: Optional[int], b: Optional[int]) -> Optional[int]:
    return None if a is None or b is None else a - b


def assert_step_trace_formulas(header: list[str], rows: list[list[str]]) -> None:
    """Check every row of a step_trace CSV against the REFERENCE §4 definitions.

    "Previous iteration" = the earlier row of the same (device, model) whose
    Iteration ID is one less; rows must be in Iteration End order per model.
    """
    n_reduce = (len(header) - 13) // 2
    assert len(header) == 13 + 2 * n_reduce
    last: dict[tuple[int, int], tuple[int, int]] = {}  # (device, model) -> (id, end)
    for number, row in enumerate(rows, start=2):
        assert len(row) == len(header), f"row {number} has {len(row)} cells"
        v = [_num(c) for c in row]
        device, it_id, fp, bp, end, it_time, fp_bp, refresh, aug, model = v[:10]
        assert device is not None and it_id is not None and end is not None and model is not None
        key = (device, model)
        prev = last.get(key)
        if prev is not None:
            assert end >= prev[1], f"row {number}: not in Iteration End order"
        prev_end = prev[1] if prev is not None and prev[0] == it_id - 1 else None
        where = f"row {number}: {row}"
        assert fp_bp == _diff(bp, fp), where
        assert refresh == _diff(end, bp), where
        assert aug == _diff(fp, prev_end), where
        expected_time = _diff(end, prev_end) if prev_end is not None else _diff(end, fp)
        assert it_time == expected_time, where
        for k in range(n_reduce):
            start, dur = v[10 + 2 * k], v[11 + 2 * k]
            if start is None:
                assert dur is None, where
        gn_start, gn_end, gn_time = v[-3:]
        assert gn_time == _diff(gn_end, gn_start), where
        last[key] = (it_id, end)
