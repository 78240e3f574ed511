"""The run's contract in raw_format/: the PROF folder's name, built and parsed by one owner."""
from __future__ import annotations

import re

from npu_tf_profiling.raw_format.prof_name import ProfName
from npu_tf_profiling.reports.prof_dir import report_timestamp


def test_a_new_prof_name_parses_back_and_gives_the_reports_their_stamp(tmp_path) -> None:
    name = ProfName.new(4242, now=0.0)
    text = str(name)
    assert re.fullmatch(r"PROF_4242_\d{14}_[A-Z0-9]{8}", text)
    assert ProfName.parse(text) == name and ProfName.of(tmp_path / text) == name
    assert report_timestamp(tmp_path / text) == name.stamp
    assert ProfName.new(4242, now=0.0).id != name.id  # two folders of one second stay apart


def test_a_renamed_folder_is_no_prof_name_and_its_reports_take_the_current_time(tmp_path) -> None:
    for renamed in ("my_run", "PROF_x_20240102030405_ab", "PROF_1_2024010203040_ab"):
        assert ProfName.parse(renamed) is None
    assert report_timestamp(tmp_path / "my_run", now=0.0) == ProfName.new(1, now=0.0).stamp
