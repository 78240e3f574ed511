"""The user's fp_point/bp_point at run time: used when the graph has them, else the automatic point, said loudly.

`find_trace_points()` and `npu-tf-prof points` raise on a name that is not in
the graph: they are the tools for checking names. A training job must not die
of the same typo at its first step, though, so here a misspelt point becomes one
note (with the closest op names) and the automatic point for that field. The
same record explains a point asked for after the probes were wired (a dynamic
config edit, or a later session on the same graph), which cannot be applied.

Both land in info.json under each model, as `trace_points_fallback`:
    {"fp_point": {"asked": "layer_1/Conv2D", "used": "conv1/Conv2D", "reason": "..."}, "bp_point": {...}}
("used" is None when there is no automatic point either); see docs/output_format.md.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from npu_tf_profiling.graph_points import Discovery, TracePoints, TracePointsError
from npu_tf_profiling.raw_format import layout

POINT_OPTIONS = ("fp_point", "bp_point")
FALLBACK_KEY = layout.K_TRACE_POINTS_FALLBACK


@dataclass(frozen=True)
class ChosenPoints:
    """The points a graph's probes time, what was asked for, and each asked name that was not used."""

    points: TracePoints
    asked: Mapping[str, str]  # option -> name ("" = automatic), as the request gave it
    fallbacks: Mapping[str, Mapping[str, Any]]  # option -> {"asked", "used", "reason"}

    @property
    def user_bp(self) -> bool:
        """The probes time the user's bp op (its end), not "all gradients ready"."""
        return bool(self.asked["bp_point"]) and "bp_point" not in self.fallbacks

    def fallbacks_for(self, asked: Mapping[str, str]) -> dict[str, dict[str, Any]]:
        """The fallbacks to record for a collection that asks for `asked` on this graph.

        Probes are wired into the graph at its first profiled step; a collection that
        asks for other points later (a dynamic config edit) gets these points, and the
        record says why.
        """
        records = {option: dict(record) for option, record in self.fallbacks.items()}
        for option in POINT_OPTIONS:
            wanted = asked.get(option, "")
            if wanted != self.asked[option]:
                records[option] = {
                    "asked": wanted,
                    "used": used_point(self.points, option),
                    "reason": (f"this graph's probes were wired at its first profiled step for "
                               f"{_describe(option, self.asked[option])}; they cannot be rewired while the job runs"),
                }
        return records


def choose_points(discovery: Discovery, asked: Mapping[str, str]) -> ChosenPoints:
    """The graph's points with the user's names where the graph has them (see the module docstring)."""
    usable = {option: asked.get(option, "") for option in POINT_OPTIONS}
    reasons: dict[str, str] = {}
    for option in POINT_OPTIONS:
        if usable[option]:
            try:
                discovery.points(**{option: usable[option]})
            except TracePointsError as exc:
                reasons[option] = str(exc)
                usable[option] = ""
    points = discovery.points(usable["fp_point"], usable["bp_point"])
    fallbacks = {
        option: {"asked": asked[option], "used": used_point(points, option), "reason": reason}
        for option, reason in reasons.items()
    }
    return ChosenPoints(points, {option: asked.get(option, "") for option in POINT_OPTIONS}, fallbacks)


def fallback_note(option: str, record: Mapping[str, Any]) -> str:
    """The note for a name the graph does not have (the reason lists the closest op names)."""
    used = record["used"]
    instead = f"the automatic {option} {used}" if used else f"no {option} (none is found automatically either: its columns are N/A)"
    return f"{record['reason']}; training goes on with {instead} (info.json: {FALLBACK_KEY})"


def not_applied_note(option: str, record: Mapping[str, Any]) -> str:
    """The note for a point asked for after the probes were wired."""
    return f"{_describe(option, record['asked'])} not applied: {record['reason']}; the probes keep timing {record['used']}"


def used_point(points: TracePoints, option: str) -> str | None:
    return points.fp if option == "fp_point" else points.bp


def _describe(option: str, name: str) -> str:
    return f"{option} {name!r}" if name else f"the automatic {option}"
