"""TracePoints: what discovery found in one training graph.

Immutable, so the runtime can hand one object to every probe builder and
cache it per graph; ``to_dict``/``from_dict`` give the JSON form written to
info.json and printed by ``npu-tf-prof points --json``.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping


@dataclass(frozen=True)
class TracePoints:
    """The step-trace points of one graph.

    fp: op whose start marks forward-propagation start (None: not a training
        graph, or no forward op found).
    bp: op whose end marks backward-propagation end.
    bp_inputs: tensor names ("op:port") of every gradient as the backward pass
        produces it, i.e. feeding the optimizer updates or the all-reduces
        (tensors computed *after* an all-reduce are not listed): the runtime
        can time "all gradients ready" on them instead of on ``bp`` alone.
    get_next: data-input ops (iterator/queue reads, or feed_dict Placeholders)
        that feed the training step; all are ancestors of ``iteration_end``.
    all_reduce: communication ops fed by gradients, in topological order,
        grouped; a new group starts whenever a backward compute op comes
        between two of them in that order.
    iteration_end: the op whose run is one training iteration (the train op,
        or the global-step update a v1 optimizer returns). None for inference.
    iteration_end_also: in a `tf.function` whose outputs do not wait on all it runs (a step that
        returns nothing), the other ops every call runs: the iteration end is after them too.
    global_step: op name of the global-step variable, when the graph has one.
    is_training: whether the graph has a training step (optimizer updates
        fed by gradients).
    reasons: one sentence per choice; warnings start with "warning: ".
    """

    fp: str | None = None
    bp: str | None = None
    bp_inputs: tuple[str, ...] = ()
    get_next: tuple[str, ...] = ()
    all_reduce: tuple[tuple[str, ...], ...] = ()
    iteration_end: str | None = None
    global_step: str | None = None
    is_training: bool = False
    reasons: tuple[str, ...] = field(default=())
    iteration_end_also: tuple[str, ...] = ()

    @property
    def warnings(self) -> tuple[str, ...]:
        return tuple(r for r in self.reasons if r.startswith("warning: "))

    @property
    def found(self) -> bool:
        """Both points known: what the CLI's exit code 0 means."""
        return self.fp is not None and self.bp is not None

    def profiling_options(self) -> dict[str, str]:
        """The ``{"fp_point": ..., "bp_point": ...}`` snippet for profiling_options."""
        return {"fp_point": self.fp or "", "bp_point": self.bp or ""}

    def to_dict(self) -> dict[str, Any]:
        return {
            "fp": self.fp,
            "bp": self.bp,
            "bp_inputs": list(self.bp_inputs),
            "get_next": list(self.get_next),
            "all_reduce": [list(group) for group in self.all_reduce],
            "iteration_end": self.iteration_end,
            "global_step": self.global_step,
            "is_training": self.is_training,
            "reasons": list(self.reasons),
            "iteration_end_also": list(self.iteration_end_also),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "TracePoints":
        """Inverse of ``to_dict``; missing keys take the defaults so older
        info.json files still load."""
        return cls(
            fp=data.get("fp"),
            bp=data.get("bp"),
            bp_inputs=tuple(data.get("bp_inputs", ())),
            get_next=tuple(data.get("get_next", ())),
            all_reduce=tuple(tuple(group) for group in data.get("all_reduce", ())),
            iteration_end=data.get("iteration_end"),
            global_step=data.get("global_step"),
            is_training=bool(data.get("is_training", False)),
            reasons=tuple(data.get("reasons", ())),
            iteration_end_also=tuple(data.get("iteration_end_also", ())),
        )


def counted(n: int, noun: str) -> str:
    """``"1 optimizer update"``, ``"3 optimizer updates"``: how reasons word counts."""
    return f"{n} {noun}" + ("" if n == 1 else "s")
