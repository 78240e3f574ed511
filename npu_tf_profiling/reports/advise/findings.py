"""A finding: the rule, its evidence, the action, the line, the expected gain and how it was computed.

The gain is a share of Iteration Time (percent), computed from the measured
phase shares by the formula the finding carries (docs/advise.md), so a user can
check it and the benchmark can hold the advisor to it. Findings sort by that
gain; a finding whose gain cannot be predicted (None) sorts last.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Optional

HIGH, MEDIUM, LOW = "high", "medium", "low"
UNKNOWN_WHERE = "unknown"
MIN_GAIN_PCT = 1.0  # below this a finding is noise for the user, whatever its rule


@dataclass
class Finding:
    rule: str
    knob: str  # the API and argument to change, short: "Dataset.map(num_parallel_calls)"
    evidence: dict[str, Any]
    action: str
    where: str  # "file:line", or "unknown: <reason>"
    expected_gain_pct: Optional[float]
    gain_formula: str
    confidence: str
    device_id: Optional[int] = None
    model_id: Optional[int] = None
    diff: Optional[str] = None  # a suggested unified diff of the user's file (never applied)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def headline(self) -> str:
        gain = "gain not predictable" if self.expected_gain_pct is None else f"~{self.expected_gain_pct:.1f}% of iteration time"
        return f"[{self.rule}] {self.action} at {self.where} ({gain}, {self.confidence} confidence)"


def unknown_where(reason: str) -> str:
    return f"{UNKNOWN_WHERE}: {reason}"


def pct(share: Optional[float]) -> Optional[float]:
    return None if share is None else round(100.0 * share, 1)


@dataclass
class Advice:
    """Every finding of one PROF folder (or of a whole output folder), best first."""

    source: str
    findings: list[Finding] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def sort(self) -> "Advice":
        self.findings.sort(key=lambda f: -(f.expected_gain_pct if f.expected_gain_pct is not None else -1.0))
        return self

    def to_dict(self) -> dict[str, Any]:
        return {"source": self.source, "findings": [f.to_dict() for f in self.findings], "notes": list(self.notes)}

    def render_text(self) -> str:
        lines = [self.source]
        if not self.findings:
            lines.append("  no finding: nothing measured here points to a knob worth turning")
        for i, f in enumerate(self.findings, 1):
            where = f" (device {f.device_id}, model {f.model_id})" if f.model_id is not None else ""
            lines.append(f"  {i}. [{f.rule}]{where} {f.action}")
            lines.append(f"     where: {f.where}")
            gain = "not predictable" if f.expected_gain_pct is None else f"{f.expected_gain_pct:.1f}% of iteration time"
            lines.append(f"     expected gain: {gain} = {f.gain_formula}; confidence {f.confidence}")
            lines.append("     evidence: " + ", ".join(f"{k} {v}" for k, v in f.evidence.items()))
            if f.diff:
                lines.append("     suggested change (not applied):")
                lines.extend("       " + line for line in f.diff.rstrip("\n").splitlines())
        lines.extend(f"  note: {n}" for n in self.notes)
        return "\n".join(lines) + "\n"


JSON_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "npu-tf-prof advise --json",
    "type": "array",
    "items": {
        "type": "object",
        "required": ["source", "findings", "notes"],
        "properties": {
            "source": {"type": "string"},
            "notes": {"type": "array", "items": {"type": "string"}},
            "findings": {"type": "array", "items": {
                "type": "object",
                "required": ["rule", "knob", "evidence", "action", "where", "expected_gain_pct", "gain_formula", "confidence"],
                "properties": {
                    "rule": {"type": "string"},
                    "knob": {"type": "string"},
                    "evidence": {"type": "object"},
                    "action": {"type": "string"},
                    "where": {"type": "string"},
                    "expected_gain_pct": {"type": ["number", "null"]},
                    "gain_formula": {"type": "string"},
                    "confidence": {"enum": [HIGH, MEDIUM, LOW]},
                    "device_id": {"type": ["integer", "null"]},
                    "model_id": {"type": ["integer", "null"]},
                    "diff": {"type": ["string", "null"]},
                },
            }},
        },
    },
}
