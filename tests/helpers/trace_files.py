"""Test helpers: find and read what a profiled run wrote (plain csv/json, independent of `reports`)."""
from __future__ import annotations

import csv
import json
from pathlib import Path

from npu_tf_profiling.raw_format.training_frame import Frame, decode_frames

HEADER = [
    "Device_id", "Iteration ID", "FP Start(us)", "BP End(us)", "Iteration End(us)", "Iteration Time(us)",
    "FP to BP Time(us)", "Iteration Refresh(us)", "Data Aug Bound(us)", "Model ID",
]


def only_prof_dir(output: Path) -> Path:
    dirs = sorted(output.glob("PROF_*"))
    assert len(dirs) == 1, f"expected one PROF_* folder in {output}, found {dirs}"
    return dirs[0]


def step_trace_rows(output: Path, prof: Path | None = None) -> tuple[list[str], list[dict[str, str]]]:
    """The step trace CSV of `output`'s one PROF_* folder (or of `prof`, one of several): its header and rows."""
    prof = prof or only_prof_dir(output)
    csvs = sorted((prof / "mindstudio_profiler_output").glob("step_trace_*.csv"))
    assert len(csvs) == 1, csvs
    with csvs[0].open(newline="") as handle:
        reader = csv.DictReader(handle)
        return list(reader.fieldnames or []), list(reader)


def raw_records(output: Path) -> list[dict]:
    """The device's step-trace records in file order, as the JSON-line form spells them."""
    data = next(only_prof_dir(output).glob("device_*")) / "data"
    if (data / "training_trace.jsonl").exists():
        return [json.loads(line) for line in (data / "training_trace.jsonl").read_text().splitlines()]
    return frame_records((data / "training_trace.bin").read_bytes())


def frame_records(data: bytes) -> list[dict]:
    """Decode binary frames with the raw-format contract (every record must be whole)."""
    records = []
    for frame in decode_frames(data):
        assert isinstance(frame, Frame), frame
        shape = frame.shape
        for row in frame.rows:
            times = [None if t != t else float(t) for t in row["times"]]
            fp_at = 2 * shape.get_next_pairs
            at = fp_at + shape.has_fp + shape.has_bp
            records.append({
                "model_id": frame.model_id,
                "run": int(row["run"]),
                "step": int(row["step"]) if shape.has_step else None,
                "get_next": [times[2 * i : 2 * i + 2] for i in range(shape.get_next_pairs)],
                "fp_start": times[fp_at] if shape.has_fp else None,
                "bp_end": times[fp_at + shape.has_fp] if shape.has_bp else None,
                "reduce": [times[at + 2 * i : at + 2 * i + 2] for i in range(shape.reduce_pairs)],
                "iteration_end": times[-1],
            })
    return records


def num(value: str) -> float | None:
    return None if value == "N/A" else float(value)


def assert_step_trace_formulas(rows: list[dict[str, str]], one_data_input: bool = True) -> None:
    """REFERENCE §4 row by row, per Model ID, plus the physical ordering of the points.

    `one_data_input=False`: the GetNext span covers several inputs (replicas), so its end may follow FP Start.
    The previous iteration is the row above only when its Iteration ID is one less (the spec's rule): where
    steps overlap (a `tf.range` loop of steps) two rows may end in the other order of their run numbers, and
    each is then a first one (Data Aug Bound N/A).
    """
    by_model: dict[str, list[dict[str, str]]] = {}
    for row in rows:
        by_model.setdefault(row["Model ID"], []).append(row)
    for model_rows in by_model.values():
        previous_end, previous_id = None, None
        for row in model_rows:
            fp, bp, end = num(row["FP Start(us)"]), num(row["BP End(us)"]), num(row["Iteration End(us)"])
            assert fp is not None and bp is not None and end is not None, row
            assert fp < bp <= end, row
            assert num(row["FP to BP Time(us)"]) == pytest_approx(bp - fp)
            assert num(row["Iteration Refresh(us)"]) == pytest_approx(end - bp)
            iteration_id = int(row["Iteration ID"])
            if previous_id != iteration_id - 1:
                assert row["Data Aug Bound(us)"] == "N/A"
                assert num(row["Iteration Time(us)"]) == pytest_approx(end - fp)
            else:
                assert num(row["Data Aug Bound(us)"]) == pytest_approx(fp - previous_end)
                assert num(row["Iteration Time(us)"]) == pytest_approx(end - previous_end)
            if "GetNext End(us)" in row and row["GetNext End(us)"] != "N/A":
                assert num(row["GetNext End(us)"]) <= fp or not one_data_input, row
                assert num(row["GetNext Time(us)"]) == pytest_approx(num(row["GetNext End(us)"]) - num(row["GetNext Start(us)"]))
            previous_end, previous_id = end, iteration_id


def pytest_approx(value: float):
    import pytest

    return pytest.approx(value, abs=0.15)
