"""Which all-or-nothing writes are also fsync'ed: the run's metadata is, reports are not (raw_format/atomic.py says why)."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from npu_tf_profiling.raw_format import atomic


@pytest.fixture
def synced(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    calls: list[int] = []
    real = os.fsync

    def counting(fd: int) -> None:
        calls.append(fd)
        real(fd)

    monkeypatch.setattr(atomic.os, "fsync", counting)
    return calls


def test_run_metadata_is_synced_before_it_replaces_the_old_file(tmp_path: Path, synced: list[int]) -> None:
    atomic.atomic_write_json(tmp_path / "info.json", {"a": 1})
    assert len(synced) == 1 and (tmp_path / "info.json").read_text().startswith("{")


def test_reports_are_moved_into_place_whole_without_a_sync(tmp_path: Path, synced: list[int]) -> None:
    atomic.atomic_write_text(tmp_path / "report.csv", "a,b\n")
    with atomic.AtomicFile(tmp_path / "page.html") as out:
        out.handle.write("<html>")
    assert synced == []
    assert (tmp_path / "report.csv").read_text() == "a,b\n" and (tmp_path / "page.html").read_text() == "<html>"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["page.html", "report.csv"]  # no temporary file left
