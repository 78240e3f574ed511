"""What anomaly_capture's watch (`runtime.anomaly_watch`) keeps of a stretch: a capture and its line, and the slow
iterations in a row that await confirmation. Data only: the rules that fill them are the watch's.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

KIND_REFERENCE = "reference"
KIND_ANOMALY = "anomaly"
KIND_LEFT_OUT = "left_out"
KIND_DROPPED = "dropped_in_case"  # a trace the training thread's look armed, whose row was not slow (anomaly_watch)


@dataclass
class Capture:
    """A capture (the reference, or an anomaly's stretch, captured or held back) and its line of anomalies.jsonl."""

    kind: str
    model_id: int
    baseline_us: float
    first_slow: int | None = None
    last_slow: int | None = None
    slow_iterations: int = 0
    worst_factor: float = 0.0
    uncaptured_reason: str | None = None  # slow, but max_captures or the cooldown held the capture back
    start: int | None = None  # the first iteration granted task_trace (set by `wants`)
    captured: list[int] = field(default_factory=list)
    still_slow: list[int] = field(default_factory=list)
    seen: set[int] = field(default_factory=set)
    times_us: list[float] = field(default_factory=list)  # the captured iterations' times (task_trace included)
    traced_us: float | None = None  # a reference's: the median of its traced iterations
    slow_open: bool = True  # the slow stretch has not ended yet
    confirmed: bool = False  # armed by the last of NEEDED_CAP slow iterations in a row (short stretches were seen: anomaly_watch)
    in_case: bool = False  # armed at the slow iteration itself, before the ones that follow confirm it (anomaly_watch)
    hinted_s: float | None = None  # armed by the training thread's look (`hint`): the interval it saw, until the row's verdict
    from_hint: bool = False  # armed by the look (kept after the verdict): its first slow iteration ended before the tracing

    def entry(self) -> dict[str, Any]:
        line: dict[str, Any] = {"kind": self.kind, "model_id": self.model_id, "baseline_us": round(self.baseline_us, 1),
                                "captured": self.captured, "captured_us": [round(t, 1) for t in self.times_us]}
        if self.kind == KIND_ANOMALY:
            line.update(first_slow=self.first_slow, last_slow=self.last_slow, slow_iterations=self.slow_iterations,
                        factor=round(self.worst_factor, 2), still_slow=self.still_slow,
                        persisted=bool(self.still_slow))
            if self.uncaptured_reason:
                line["not_captured"] = self.uncaptured_reason
                if self.captured:  # traced in case it went on, then dropped: no capture
                    line["traced_in_case"] = line.pop("captured")
                    line["captured"], line["captured_us"] = [], []
            if self.confirmed:
                line["confirmed_by_next"] = True
        elif self.traced_us is not None:
            line["traced_us"] = round(self.traced_us, 1)  # what later captured iterations are judged against
        return line


@dataclass
class Pending:
    """A model's slow iterations in a row, awaiting `needed` of them before they make a capture."""

    first: int
    time_us: float
    baseline: float
    needed: int
    count: int = 1
    last: int = 0
    worst_us: float = 0.0

    def __post_init__(self) -> None:
        self.last, self.worst_us = self.first, self.time_us

    def advance(self, iteration_id: int, time_us: float) -> bool:
        """One more slow iteration in a row: whether they are now enough."""
        self.count, self.last, self.worst_us = self.count + 1, iteration_id, max(self.worst_us, time_us)
        return self.count >= self.needed
