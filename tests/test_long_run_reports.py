"""Long runs (issue 39): the step-trace timeline sliced as CANN does, through the report command and the option;
a long rank's msprof-analyze folder holds what msprof-analyze's cluster analysis reads, not GB-sized JSON."""
from __future__ import annotations

import json

from npu_tf_profiling.cli import main
from npu_tf_profiling.raw_format import layout
from npu_tf_profiling.reports.encoders.chrome_trace import validate_chrome_trace
from npu_tf_profiling.reports.msprof import names
from npu_tf_profiling.reports.msprof import writer as msprof_writer
from npu_tf_profiling.reports.writer import write_all_reports
from npu_tf_profiling.testing.step_synthetic import StepPlan, write_step_prof_dir

TS = "20240102030405"


def _iteration_of(event: dict) -> int:
    """The Iteration ID a step-trace span belongs to (its name ends with it; GetNext says it in its args)."""
    name = event["name"]
    if name == "GetNext":
        return event["args"]["Iteration ID"]
    return int(name.split("_")[1]) if name.startswith("Reduce_") else int(name.rsplit(" ", 1)[1])


def test_report_slices_a_long_timeline_between_iterations_and_keeps_every_event(tmp_path, capsys):
    prof = write_step_prof_dir(tmp_path, StepPlan(iterations=1500, noise=0.05))
    whole = write_all_reports(prof)
    out_dir = layout.report_dir(prof)
    reference = json.loads((out_dir / f"step_trace_{TS}.json").read_text())
    assert whole[1].name == f"step_trace_{TS}.json" and len(whole) >= 2

    assert main(["report", str(prof), "--slice-mb", "0.25"]) == 0
    err = capsys.readouterr().err
    slices = sorted(out_dir.glob(f"step_trace_slice_*_{TS}.json"), key=lambda p: int(p.name.split("_")[3]))
    assert len(slices) >= 3 and "slices of at most 0.25 MiB" in err
    assert not (out_dir / f"step_trace_{TS}.json").exists()  # the whole file is replaced by its slices
    meta = [e for e in reference if e["ph"] == "M"]
    seen, last = [], 0
    for path in slices:
        assert path.stat().st_size <= 0.25 * 1024 * 1024
        events = json.loads(path.read_text())
        assert validate_chrome_trace(events) == []
        assert [e for e in events if e["ph"] == "M"] == meta  # every slice names its tracks
        iterations = sorted({_iteration_of(e) for e in events if e["ph"] == "X"})
        assert iterations[0] == last + 1 and iterations == list(range(iterations[0], iterations[-1] + 1))
        last = iterations[-1]
        seen += [e for e in events if e["ph"] == "X"]
    assert last == 1500
    key = lambda e: json.dumps(e, sort_keys=True)  # noqa: E731
    assert sorted(map(key, seen)) == sorted(map(key, (e for e in reference if e["ph"] == "X")))


def test_the_profiling_option_sets_the_slice_size(tmp_path):
    prof = write_step_prof_dir(tmp_path, StepPlan(iterations=3000))
    assert [p.name for p in write_all_reports(prof)[1:]] == [f"step_trace_{TS}.json"]  # about 2 MiB: one file by default
    (prof / "device_0" / layout.INFO_FILE).write_text(json.dumps({"device_id": 0, "options": {"timeline_slice_mb": 1}}))
    sliced = write_all_reports(prof)
    assert [p.name for p in sliced[1:]] == [f"step_trace_slice_{n}_{TS}.json" for n in range(len(sliced) - 1)]
    assert len(sliced) > 2 and all(p.stat().st_size <= 1024 * 1024 for p in sliced[1:])
    assert not (layout.report_dir(prof) / f"step_trace_{TS}.json").exists()


def test_a_long_rank_gets_the_databases_not_the_text_copies(tmp_path, monkeypatch):
    prof = write_step_prof_dir(tmp_path, StepPlan(iterations=300))
    short = write_all_reports(prof)
    out = names.profiler_output_dir(short.layout_folders[0])
    assert (out / names.TRACE_VIEW_JSON).is_file() and (out / names.COMMUNICATION_JSON).is_file()
    monkeypatch.setattr(msprof_writer, "TEXT_LAYOUT_MAX_EVENTS", 500)  # under 300 iterations + 300 all-reduces
    long = write_all_reports(prof)
    for name in msprof_writer.TEXT_COPIES:
        assert not (out / name).exists(), name
    for name in (names.profiler_db_name(0), names.ANALYSIS_DB):
        assert (out / name).is_file()
    assert (short.layout_folders[0] / names.profiler_info_name(0)).is_file()
    assert any("left out" in n and names.TRACE_VIEW_JSON in n for n in long.notes)
