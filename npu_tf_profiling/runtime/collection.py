"""What to collect right now: one PROF_* folder, which traces are on, and the iteration window.

A static request (session ConfigProto, env vars, NPURunConfig) is one Collection
for the life of the process. `PROFILING_MODE=dynamic` swaps Collections in and out
while the job runs (see `dynamic`).
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from npu_tf_profiling.config import Resolution
from npu_tf_profiling.config.schedule import CollectionWindow
from npu_tf_profiling.runtime.profiling_run import ProfilingRun, profiling_run_for


@dataclass
class Collection:
    run: ProfilingRun
    training_trace: bool
    task_trace: bool
    window: CollectionWindow | None

    @classmethod
    def start(cls, resolution: Resolution, fresh: bool = False) -> "Collection":
        """`fresh` (dynamic collections): a new PROF_* folder, and the window bounds every trace,
        since the whole point of a dynamic edit is to collect those iterations only."""
        options = resolution.options
        window = CollectionWindow.from_options(options)
        if fresh and window is not None:
            window = dataclasses.replace(window, applies_to_training_trace=True)
        return cls(
            run=profiling_run_for(resolution, fresh=fresh),
            training_trace=options.is_on("training_trace"),
            task_trace=options.is_on("task_trace"),
            window=window,
        )

    @property
    def active(self) -> bool:
        return (self.training_trace or self.task_trace) and self.run.collecting

    def wants(self, iteration_id: int) -> tuple[bool, bool]:
        """(record the step trace, capture the tasks) for this iteration."""
        in_window = self.window is None or self.window.records(iteration_id)
        probe = self.training_trace and (in_window or not self.window.applies_to_training_trace)
        return probe, self.task_trace and in_window

    def done_after(self, iteration_id: int) -> bool:
        """True once the window has nothing left to record after this iteration."""
        return self.window is not None and self.window.finished_after(iteration_id)


@dataclass
class IterationCounter:
    """Iteration numbering of one training graph, across sessions and collections.

    `runs` counts every iteration (traced or not), so records carry a stable `run`
    number. The Iteration ID a window is judged by is the global step when one has
    been seen (it lines up across ranks and repeated Estimator.train calls), else
    the run number.
    """

    runs: int = 0
    last_step: int | None = None
    runs_at_last_step: int = 0

    def begin(self) -> tuple[int, int]:
        """(run number, expected Iteration ID) of the iteration about to run."""
        self.runs += 1
        if self.last_step is None:
            return self.runs, self.runs
        return self.runs, self.last_step + (self.runs - self.runs_at_last_step)

    def cancel(self, run: int) -> None:
        """The iteration `run` raised (e.g. OutOfRangeError at the end of the data): it did not happen."""
        if self.runs == run:
            self.runs -= 1

    def saw_step(self, run: int, step: int | None) -> None:
        if step is not None:
            self.last_step, self.runs_at_last_step = step, run

    @property
    def knows_step(self) -> bool:
        return self.last_step is not None
