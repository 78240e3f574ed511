"""The ``export_type`` option (torch_npu's): "text", "db" or both decide which reports are written; the run's
options in info.json are re-checked by each option's own validator when the reports read them."""
from __future__ import annotations

import json

import pytest

from npu_tf_profiling.config import ProfilingOptions
from npu_tf_profiling.raw_format import layout
from npu_tf_profiling.reports.msprof import names
from npu_tf_profiling.reports.msprof import writer as msprof_writer
from npu_tf_profiling.reports.encoders.trace_slices import DEFAULT_SLICE_BYTES
from npu_tf_profiling.reports.writer import write_all_reports
from npu_tf_profiling.testing.step_synthetic import StepPlan, write_step_prof_dir

TS = "20240102030405"
DATABASES = (names.profiler_db_name(0), names.ANALYSIS_DB)


@pytest.mark.parametrize("given,stored", [("db", "db"), (["db", "text"], "text,db"), ("db, text", "text,db"), (["text"], "text")])
def test_torch_npu_spellings_are_stored_as_one(given, stored):
    assert ProfilingOptions.parse({"export_type": given}).to_dict()["export_type"] == stored


def _with_options(prof, options: dict) -> None:
    (prof / "device_0" / layout.INFO_FILE).write_text(json.dumps({"device_id": 0, "options": options}))


def _files(prof, folder) -> tuple[set[str], set[str]]:
    """The names in the PROF folder's report folder, and in the rank folder's profiler output."""
    return ({p.name for p in layout.report_dir(prof).iterdir() if not p.name.startswith(".")},
            {p.name for p in names.profiler_output_dir(folder).iterdir()})


@pytest.fixture(scope="module")
def prof(tmp_path_factory):
    return write_step_prof_dir(tmp_path_factory.mktemp("export"), StepPlan(iterations=40))


def test_each_export_type_writes_its_files_and_removes_the_others(prof):
    both = write_all_reports(prof)
    reports, rank = _files(prof, both.layout_folders[0])
    assert {f"step_trace_{TS}.csv", f"step_trace_{TS}.json"} <= reports
    assert set(DATABASES) | {names.TRACE_VIEW_JSON, names.STEP_TRACE_TIME_CSV} <= rank

    _with_options(prof, {"export_type": "text"})
    text = write_all_reports(prof)
    _, rank = _files(prof, text.layout_folders[0])
    assert not set(DATABASES) & rank and {names.TRACE_VIEW_JSON, names.STEP_TRACE_TIME_CSV} <= rank
    assert [p.name for p in text[:2]] == [f"step_trace_{TS}.csv", f"step_trace_{TS}.json"]

    _with_options(prof, {"export_type": "db"})
    db = write_all_reports(prof)
    _, rank = _files(prof, db.layout_folders[0])
    assert list(db) == [] and rank == set(DATABASES)  # the text copies of the earlier run are removed
    assert (db.layout_folders[0] / names.profiler_info_name(0)).is_file()  # msprof-analyze finds the rank by it
    assert any("export_type db: the text reports" in note for note in db.notes)


def test_a_long_rank_with_text_only_says_its_folder_is_nearly_empty(prof, monkeypatch):
    _with_options(prof, {"export_type": "text"})
    monkeypatch.setattr(msprof_writer, "TEXT_LAYOUT_MAX_EVENTS", 50)
    out = write_all_reports(prof)
    assert any("holds only the rank's profiler_info" in note and "export_type text" in note for note in out.notes)


@pytest.mark.parametrize("options,what", [
    ({"export_type": "csv"}, "export_type"),
    ({"timeline_slice_mb": 4096}, "timeline_slice_mb"),  # the option caps it at 2048; the reports once took any size
])
def test_an_edited_info_json_is_a_warning_and_the_default(prof, options, what):
    _with_options(prof, options)
    with pytest.warns(RuntimeWarning, match=rf"info.json: option '{what}': invalid value .*the default is used"):
        out = write_all_reports(prof)
    assert [p.name for p in out[:2]] == [f"step_trace_{TS}.csv", f"step_trace_{TS}.json"]
    assert out[1].stat().st_size < DEFAULT_SLICE_BYTES
    assert set(DATABASES) <= _files(prof, out.layout_folders[0])[1]
