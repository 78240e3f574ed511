"""What the summary says about a model's fp/bp points: a point that was not used, and columns that are all N/A.

The runtime records each model's trace points in info.json (``models`` ->
``TracePoints.to_dict()``: the names, and one reason per choice, warnings
starting with ``"warning: "``). Two situations leave a user with numbers they
cannot read without that file, so the summary states them:

* a user-given point the runtime did not use (not an op of the graph, or asked
  for after the probes were wired), recorded per model as
  ``trace_points_fallback: {"fp_point": {"asked", "used", "reason"}, ...}``;
* FP Start (or BP End) N/A on every iteration, e.g. a user-given fp_point that
  never runs in the training step (an initializer): the point's warning says
  why, and the fix is the automatic point;
* an Iteration End the runtime's self-check found early against the calls' host
  returns (``iteration_end_check``, runtime/end_check.py).

info.json is written by another process (or an older version), so every
field is read defensively: anything missing or malformed just says less.
"""
from __future__ import annotations

from typing import Any, Mapping

from npu_tf_profiling.raw_format import layout
from npu_tf_profiling.raw_format.run_info import RunInfo

FALLBACK_KEY = layout.K_TRACE_POINTS_FALLBACK
# option -> (the TracePoints key of its op, the step-trace column it starts, the columns it makes N/A)
_POINTS = {
    "fp_point": ("fp", "FP Start", "FP Start, FP to BP and Data Aug Bound"),
    "bp_point": ("bp", "BP End", "BP End, FP to BP and Iteration Refresh"),
}


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def model_entry(info: RunInfo, model_id: int) -> Mapping[str, Any]:
    """info.json's record of one model ({} when absent or not an object)."""
    entry = info.models.get(str(model_id))
    return entry if isinstance(entry, Mapping) else {}


def fallback_notes(entry: Mapping[str, Any]) -> list[str]:
    """One line per user-given point the runtime did not use, from ``trace_points_fallback``."""
    records = entry.get(FALLBACK_KEY)
    if not isinstance(records, Mapping):
        return []
    notes = []
    for option in _POINTS:
        record = records.get(option)
        if not isinstance(record, Mapping) or _text(record.get("asked")) is None:
            continue
        used = _text(record.get("used"))
        reason = _text(record.get("reason"))
        # "used" is the automatic point for a name the graph lacks, the wired one for a late dynamic request
        instead = f"{used} was timed instead" if used else f"no {option} was timed (its columns are N/A)"
        notes.append(f"{option} {record['asked']!r} was not used" + (f" ({reason})" if reason else "") + f": {instead}")
    return notes


def all_na_note(option: str, entry: Mapping[str, Any], asked: str) -> str:
    """Why the columns of ``option``'s point are N/A on every iteration, and what to do about it."""
    key, column, columns = _POINTS[option]
    name = _text(entry.get(key))
    reasons = entry.get("reasons")
    warnings = [r[len("warning: "):] for r in reasons if isinstance(r, str) and r.startswith(f"warning: {option} ")] \
        if isinstance(reasons, list) else []
    if asked and name is not None and name == asked.rsplit(":", 1)[0]:  # a tensor name means its op
        why = warnings[0] if warnings else f"{option} {name} is the user's choice"
        return (f"{column} is N/A on every iteration ({columns} too): {why}. "
                f"Leave {option} empty to use the automatic point; `npu-tf-prof points` on the saved graph shows which op that is")
    if name is None:
        return f"{column} is N/A on every iteration ({columns} too): no {option} was found in the graph (info.json's reasons say why)"
    return f"{column} is N/A on every iteration ({columns} too), although {option} is {name} (info.json's reasons say how it was chosen)"


def point_notes(info: RunInfo, model_id: int, fp_measured: bool, bp_measured: bool) -> list[str]:
    """Every line the summary shows about this model's points (empty when they are unremarkable)."""
    entry = model_entry(info, model_id)
    options = info.options
    notes = fallback_notes(entry)
    records = entry.get(FALLBACK_KEY) if isinstance(entry.get(FALLBACK_KEY), Mapping) else {}
    for option, measured in (("fp_point", fp_measured), ("bp_point", bp_measured)):
        if not measured and option not in records and entry:
            notes.append(all_na_note(option, entry, _text(options.get(option)) or ""))
    check = entry.get(layout.K_ITERATION_END_CHECK)
    if isinstance(check, Mapping) and _text(check.get("note")):
        notes.append(check["note"])
    return notes
