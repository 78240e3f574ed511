"""``ReportPaths``: what a report run wrote, and the lines a user should see (no heavy imports: the job uses it)."""
from __future__ import annotations

from pathlib import Path
from typing import Optional


class ReportPaths(list):
    """The written files (a plain ``list[Path]``) plus ``notes``: lines a user should see.

    Notes say how many tasks each device had and what was skipped, and when
    the msprof timeline was split into several files under its size budget.
    """

    def __init__(self, paths: Optional[list[Path]] = None, notes: Optional[list[str]] = None) -> None:
        super().__init__(paths or [])
        self.notes: list[str] = list(notes or [])
        self.timings: dict[str, float] = {}  # seconds per phase of the task files (benchmarks)
        self.layout_folders: list[Path] = []  # the ranks' msprof-analyze / MindStudio Insight folders
