"""anomaly_capture's detection: a rolling baseline per model, and task_trace armed when iterations turn slow.

Detection runs where the iteration times already arrive: the ring reader thread
(`ring_reader`) hands each drained batch of a model's rows to `observe`, so the
training thread pays nothing but one more question when it asks whether to
trace the tasks of the run it starts (`wants`), the question it already asks
of the collection window.

The baseline is the median of the last BASELINE_ITERATIONS steady iterations
of each model (slow ones never enter it, so a long slow regime cannot become
the norm it is judged by). An iteration slower than ``factor`` × baseline and
than baseline + ``min_us`` is slow; the first slow one arms task_trace for the next
``steps`` iterations the training thread starts (FULL_TRACE on the Session
path, a `tf.profiler` window on the TensorFlow 2 path: both already take
task_trace where `Collection.wants` says so). Once the baseline holds
REFERENCE_AFTER iterations, one reference capture of normal iterations is
taken, so the reports can say what the slow ones ran that the normal ones did
not; a model's detection starts once its reference is done. A traced iteration is slower by the tracing itself, so it is judged by its
excess over the reference's traced iterations (`_is_slow_traced`), and the iterations just before and after a
capture (which hold the start of the tracing and the writing of the trace) are
not judged at all.

A lone slow iteration on a busy host is most often the scheduler, and capturing each one
spends the captures on noise (benchmarks/anomaly_capture.py at load 15 on 2 cores: 105 stalls
past 3x and +5 ms in 10,000 steady iterations). So detection confirms itself only where noise
was seen: while a model has had a short slow stretch (one or two slow iterations, then steady)
in the last QUIET_ITERATIONS iterations, only NEEDED_CAP slow iterations in a row make a capture
(a shorter stretch is written as not captured, with why). On a quiet run the first slow
iteration arms it. Two in a row were needed once; a busier host stalls two iterations in a row
now and then (one CPU burner beside a sub-millisecond TF2 step: 2 and 5 captures in 10,000
steady iterations, the run's first stall and then such pairs), and three stay within the recall target's regimes of 3. The rate of false
captures falls from the stall rate p to about p³ a model. So that a regime's capture does not
start later for it, the unconfirmed slow iteration arms task_trace at once, *in case*: the next
iteration the training thread starts is traced, and the judged iterations that follow make it a
capture (NEEDED_CAP slow in a row) or drop it. A dropped one is no capture (neither
``max_captures`` nor the cooldown counts it); its lone line names the iterations traced in case
(``traced_in_case``: their tasks are in the task files), and past IN_CASE_LIMIT of them a
folder waits for the confirmation again. ``max_captures`` and ``cooldown`` (iterations after a
capture before the next) bound the disk; ``storage_limit`` still caps everything.

The reader sees an iteration only at its next drain (FAST_DRAIN_INTERVAL_S), which among
short iterations is many iterations late. So the training thread takes a first look itself:
each model's `IntervalGate` holds the slow threshold the reader last computed, and each call
of the step compares the time since the previous call's start with it (one clock read and
one comparison). An interval past it arms task_trace in case at once (`hint`), from the
very next call; the reader's verdict on that iteration's row, when it comes, makes it what
the reader would have armed itself (a capture on a quiet run, or an in-case trace awaiting the
iterations that follow) or drops it with a ``dropped_in_case`` line (its row was not slow, or was
never judged).

Each capture becomes one line of ``anomalies.jsonl`` when its iterations and its
slow stretch are over (or at exit): its first and last slow iteration, its
factor against the baseline, the iterations captured, and whether they were
still slow (a lone spike: they were not).
"""
from __future__ import annotations

import math
import statistics
import threading
from collections import deque
from typing import Any, Callable

import numpy as np

from npu_tf_profiling.config.anomaly_capture import AnomalySettings
from npu_tf_profiling.runtime.anomaly_stretch import (
    KIND_ANOMALY, KIND_DROPPED, KIND_LEFT_OUT, KIND_REFERENCE, Capture, Pending,
)

BASELINE_ITERATIONS = 50
REFERENCE_AFTER = 20  # steady iterations before the baseline is trusted (and the reference is captured)
# A short slow stretch in the last this many: NEEDED_CAP slow ones in a row make a capture. At load 4-7 on 2 cores the
# lone stalls came every ~1,500-2,000 iterations (benchmarks/anomaly_capture.py): a memory of 1,000 lapsed between
# them and let one in two be captured; 10,000 holds on a busy host and costs a quiet run nothing.
QUIET_ITERATIONS = 10_000
UNCAPTURED_LINES = 100  # uncaptured anomalies (past max_captures, in a cooldown) written; past that, only counted
IN_CASE_LIMIT = 100  # traces armed in case a slow iteration goes on (module docstring); past that, none
NEEDED_CAP = 3  # slow iterations in a row that confirm a stretch once short ones were seen (module docstring)


class IntervalGate:
    """The training thread's look at one model's iterations, before the reader drains them (module docstring).

    `threshold_s` is written by the reader thread, read by the training thread: a float, replaced whole.
    """

    __slots__ = ("threshold_s", "last_start", "_watch", "_model_id")

    def __init__(self, watch: "AnomalyWatch", model_id: int) -> None:
        self.threshold_s = math.inf  # no look until the model's detection has started (its reference done)
        self.last_start = 0.0
        self._watch, self._model_id = watch, model_id

    def started(self, now: float) -> float:
        """A call of the step starts at `now` (perf_counter): the interval since the last start if past the threshold, else 0."""
        interval, self.last_start = now - self.last_start, now
        return interval if interval > self.threshold_s else 0.0

    def hint(self, iteration_id: int, interval_s: float) -> None:
        """Iteration `iteration_id` (the one just finished) took `interval_s` between call starts: past the threshold."""
        self._watch.hint(self._model_id, iteration_id, interval_s)


class AnomalyWatch:
    """One PROF folder's detection (see the module docstring); thread-safe."""

    def __init__(self, settings: AnomalySettings, write: Callable[[dict[str, Any]], None]) -> None:
        self.settings = settings
        self._write = write
        self._lock = threading.Lock()
        self._recent: dict[int, deque[float]] = {}
        self._last_end: dict[int, float] = {}
        self._armed: Capture | None = None  # the capture task_trace is armed for (its iterations not all seen)
        self._open: Capture | None = None  # an anomaly whose slow stretch goes on after its capture ended
        self._referenced: set[int] = set()  # the models whose reference capture was armed
        self._captures = 0
        self._next_allowed = 0  # the first iteration after the cooldown
        self._disturbed: dict[int, set[int]] = {}  # per model: iterations right after a traced one (never judged)
        self._traced_baseline: dict[int, float] = {}  # per model: the reference's traced iterations' median
        self._uncaptured = 0
        self._last_short: dict[int, int] = {}  # per model: the start of its last short slow stretch
        self._pending: dict[int, Pending] = {}  # per model: slow iterations in a row awaiting more
        self._in_case_armed = 0  # traces armed in case (IN_CASE_LIMIT)
        self._gates: dict[int, IntervalGate] = {}
        self._last_seen: dict[int, int] = {}  # per model: the last iteration the reader observed
        self._last_traced: dict[int, int] = {}  # per model: the last iteration granted task_trace

    @property
    def armed(self) -> bool:
        """Whether the training thread should ask `wants` of the runs it starts."""
        capture = self._armed
        return capture is not None and len(capture.captured) < self.settings.steps

    def wants(self, iteration_id: int) -> bool:
        """Whether iteration `iteration_id`, about to start, gets task_trace (the training thread asks)."""
        with self._lock:
            capture = self._armed
            if capture is None:
                return False
            if capture.start is None:
                capture.start = iteration_id
                # The iteration before holds the start of the tracing (tf.profiler's start on the TF2 path): not judged;
                # but a look's slow iteration had ended before it, and is the one to judge.
                if not capture.from_hint:
                    self._disturbed.setdefault(capture.model_id, set()).add(iteration_id - 1)
            if len(capture.captured) < self.settings.steps and iteration_id >= capture.start:
                capture.captured.append(iteration_id)
                self._last_traced[capture.model_id] = iteration_id
                return True
            return False

    def gate(self, model_id: int) -> IntervalGate:
        """The model's gate for the training thread's look (made once; the reader keeps its threshold)."""
        gate = self._gates.get(model_id)
        if gate is None:
            with self._lock:
                gate = self._gates.setdefault(model_id, IntervalGate(self, model_id))
        return gate

    def hint(self, model_id: int, iteration_id: int, interval_s: float) -> None:
        """The training thread saw iteration `iteration_id` take `interval_s` between call starts, past the
        threshold: arm task_trace in case from the next call, where the reader could arm one now."""
        with self._lock:
            baseline = self._baseline(model_id)
            if (baseline is None or self._armed is not None or model_id not in self._traced_baseline
                    or self._in_open_stretch(model_id) or self._in_case_armed >= IN_CASE_LIMIT
                    or self._captures >= self.settings.max_captures or iteration_id < self._next_allowed
                    or iteration_id <= self._last_seen.get(model_id, 0)  # the reader judged it already
                    or iteration_id <= self._last_traced.get(model_id, 0) + 1):  # traced, or writing a trace
                return
            self._in_case_armed += 1
            capture = self._anomaly(model_id, iteration_id, interval_s * 1e6, baseline)
            capture.in_case = capture.from_hint = True
            capture.hinted_s = interval_s
            self._armed = capture
            for gate in self._gates.values():
                gate.threshold_s = math.inf  # armed: no other look until the reader has judged

    def observe(self, model_id: int, ids: np.ndarray, ends_us: np.ndarray) -> None:
        """A drained batch of one model's rows, in order: their ids and iteration ends (µs)."""
        with self._lock:
            for iteration_id, end in zip(ids.tolist(), ends_us.tolist()):
                previous = self._last_end.get(model_id)
                self._last_end[model_id] = end
                self._last_seen[model_id] = int(iteration_id)
                if previous is not None and end == end and previous == previous:  # not NaN
                    self._one(model_id, int(iteration_id), end - previous)
            self._publish_thresholds()

    def close(self) -> None:
        """At exit: every capture still open is written as it stands, and how many lines were left out."""
        with self._lock:
            in_case = self._armed if self._armed is not None and self._armed.in_case else None
            if in_case is not None and in_case.hinted_s is not None:
                self._drop_hinted(in_case, None, "the run ended before its row was read")
                in_case = None
            for capture in (self._armed, self._open):
                if capture is not None and capture is not in_case and (capture.captured or capture.kind == KIND_ANOMALY):
                    self._emit(capture)
            self._armed = self._open = None
            for model_id, pending in self._pending.items():
                unconfirmed = self._unconfirmed(model_id, pending)
                if in_case is not None and in_case.model_id == model_id:
                    unconfirmed.captured, unconfirmed.times_us = in_case.captured, in_case.times_us
                unconfirmed.uncaptured_reason = "the run ended before the next iteration could confirm it"
                self._emit(unconfirmed)
            self._pending.clear()
            if self._uncaptured > UNCAPTURED_LINES:
                self._write({"kind": KIND_LEFT_OUT, "uncaptured_anomalies": self._uncaptured - UNCAPTURED_LINES})
            self._uncaptured = 0

    # ----- internals (under the lock) --------------------------------------------------------
    def _baseline(self, model_id: int) -> float | None:
        recent = self._recent.get(model_id, ())
        return statistics.median(recent) if len(recent) >= REFERENCE_AFTER else None

    def _publish_thresholds(self) -> None:
        """Each gate's threshold: the slow bound of its model, where a look could arm a trace now; else none."""
        for model_id, gate in self._gates.items():
            baseline = self._baseline(model_id)
            ready = (baseline is not None and self._armed is None and model_id in self._traced_baseline
                     and not self._in_open_stretch(model_id) and self._captures < self.settings.max_captures)
            gate.threshold_s = (max(self.settings.factor * baseline, baseline + self.settings.min_us) / 1e6
                                if ready else math.inf)

    def _one(self, model_id: int, iteration_id: int, time_us: float) -> None:
        recent = self._recent.setdefault(model_id, deque(maxlen=BASELINE_ITERATIONS))
        baseline = self._baseline(model_id)
        capture = self._armed
        if (capture is not None and capture.hinted_s is not None and capture.model_id == model_id
                and iteration_id >= capture.first_slow and self._hint_verdict(capture, iteration_id, time_us, baseline)):
            self._finish_done()
            return
        capture = self._armed
        if capture is not None and capture.model_id == model_id and iteration_id in capture.captured:
            self._captured_one(capture, iteration_id, time_us, baseline)
        elif iteration_id not in self._disturbed.get(model_id, ()):
            self._steady_or_slow(model_id, iteration_id, time_us, baseline, recent)
        self._finish_done()

    def _is_slow(self, time_us: float, baseline: float | None) -> bool:
        return baseline is not None and time_us > self.settings.factor * baseline and time_us - baseline > self.settings.min_us

    def _is_slow_traced(self, time_us: float, traced: float, baseline: float) -> bool:
        """A traced iteration is slow by the excess over the reference's traced ones that an untraced one needs over
        the baseline: tracing adds about a constant time (a 0.7 ms step traced in ~8 ms), so `factor` times the traced
        time would hide a 5-16 ms slowdown the untraced iterations showed."""
        return time_us - traced > max((self.settings.factor - 1.0) * baseline, self.settings.min_us)

    def _captured_one(self, capture: Capture, iteration_id: int, time_us: float, baseline: float | None) -> None:
        """A traced iteration: task_trace slows it, so it is judged against the reference's traced iterations."""
        capture.seen.add(iteration_id)
        capture.times_us.append(time_us)
        self._disturbed.setdefault(capture.model_id, set()).add(iteration_id + 1)  # it holds the writing of the trace
        traced = self._traced_baseline.get(capture.model_id)
        slow = capture.kind == KIND_ANOMALY and (self._is_slow(time_us, baseline) if traced is None or baseline is None
                                                 else self._is_slow_traced(time_us, traced, baseline))
        if capture.in_case and not self._in_case_goes_on(capture, iteration_id, time_us, slow):
            return
        if slow:
            capture.still_slow.append(iteration_id)
            self._extend(capture, iteration_id, time_us)
        elif capture.kind == KIND_ANOMALY:
            capture.slow_open = False

    def _steady_or_slow(self, model_id: int, iteration_id: int, time_us: float, baseline: float | None,
                        recent: deque[float]) -> None:
        slow = self._is_slow(time_us, baseline)
        # A look's trace awaits its own iteration's row (`_hint_verdict`): an earlier row neither extends nor decides it.
        armed = self._armed if self._armed is None or self._armed.hinted_s is None else None
        for anomaly in (armed, self._open):
            if anomaly is not None and anomaly.kind == KIND_ANOMALY and anomaly.model_id == model_id and anomaly.slow_open:
                if slow:
                    self._extend(anomaly, iteration_id, time_us)
                else:
                    anomaly.slow_open = False
        in_case = armed if armed is not None and armed.in_case and armed.model_id == model_id else None
        if in_case is not None:  # extended above
            self._in_case_goes_on(in_case, iteration_id, time_us, slow)
        if not slow:
            pending = self._pending.pop(model_id, None)
            if pending is not None:  # slow, then steady: a short stretch, while short ones are common here
                self._emit(self._lone(model_id, pending))
            recent.append(time_us)
            if model_id not in self._referenced and baseline is not None and self._armed is None:
                self._referenced.add(model_id)
                self._armed = Capture(KIND_REFERENCE, model_id, baseline)
        elif in_case is None and model_id in self._traced_baseline and not self._in_open_stretch(model_id):
            pending = self._pending.get(model_id)
            if pending is not None:
                if pending.advance(iteration_id, time_us):
                    del self._pending[model_id]
                    self._detected(model_id, pending.first, pending.time_us, pending.baseline, confirmed=pending)
            elif (needed := self._needed(model_id, iteration_id)) > 1:
                self._pending[model_id] = Pending(iteration_id, time_us, baseline, needed)
                self._arm_in_case(model_id, iteration_id, time_us, baseline)
            else:
                self._detected(model_id, iteration_id, time_us, baseline)

    @staticmethod
    def _extend(anomaly: Capture, iteration_id: int, time_us: float) -> None:
        anomaly.last_slow = max(anomaly.last_slow or iteration_id, iteration_id)
        anomaly.slow_iterations += 1
        anomaly.worst_factor = max(anomaly.worst_factor, time_us / anomaly.baseline_us)

    def _needed(self, model_id: int, iteration_id: int) -> int:
        """How many slow iterations in a row make a capture now: NEEDED_CAP while a short stretch was seen in the last
        QUIET_ITERATIONS iterations, else one (module docstring)."""
        quiet = iteration_id - self._last_short.get(model_id, -QUIET_ITERATIONS - 1) > QUIET_ITERATIONS
        return 1 if quiet else NEEDED_CAP

    def _emit(self, capture: Capture) -> None:
        """Write a capture's line; past UNCAPTURED_LINES uncaptured anomalies, only their count (at close)."""
        if capture.kind == KIND_ANOMALY and capture.first_slow is not None and capture.slow_iterations < NEEDED_CAP:
            # a stretch that ended short, captured or not: what this host's noise looks like
            self._last_short[capture.model_id] = max(self._last_short.get(capture.model_id, capture.first_slow),
                                                     capture.first_slow)
        if capture.uncaptured_reason is not None:
            self._uncaptured += 1
            if self._uncaptured > UNCAPTURED_LINES:
                return
        self._write(capture.entry())

    def _in_open_stretch(self, model_id: int) -> bool:
        return any(c is not None and c.kind == KIND_ANOMALY and c.model_id == model_id and c.slow_open
                   for c in (self._armed, self._open))

    def _unconfirmed(self, model_id: int, pending: Pending) -> Capture:
        anomaly = self._anomaly(model_id, pending.first, pending.worst_us, pending.baseline)
        anomaly.slow_iterations, anomaly.last_slow = pending.count, pending.last
        return anomaly

    def _lone(self, model_id: int, pending: Pending) -> Capture:
        lone = self._unconfirmed(model_id, pending)
        what = "a lone slow iteration" if pending.count == 1 else f"{pending.count} slow iterations in a row"
        lone.uncaptured_reason = (f"{what}, with another short stretch in the last {QUIET_ITERATIONS} iterations: only "
                                  f"{pending.needed} slow ones in a row arm a capture")
        return lone

    def _arm_in_case(self, model_id: int, iteration_id: int, time_us: float, baseline: float) -> None:
        """Trace the next iterations before the slow one is confirmed, where a capture could be taken now."""
        if (self._armed is None and self._in_case_armed < IN_CASE_LIMIT and self._captures < self.settings.max_captures
                and iteration_id >= self._next_allowed):
            self._in_case_armed += 1
            self._armed = self._anomaly(model_id, iteration_id, time_us, baseline)
            self._armed.in_case = True

    def _hint_verdict(self, capture: Capture, iteration_id: int, time_us: float, baseline: float | None) -> bool:
        """The row of a look's slow iteration (or a later one: it was never judged): whether it was slow, and so handled.

        Slow: the capture becomes what the reader would have armed at it (`_steady_or_slow`), a capture on a quiet
        run or an in-case trace the judged iterations that follow decide; else it is dropped, and the iteration
        judged as usual.
        """
        judged = iteration_id == capture.first_slow and iteration_id not in self._disturbed.get(capture.model_id, ())
        if not (judged and self._is_slow(time_us, baseline)):
            why = (f"its row took {time_us:.0f} us, not slow" if judged
                   else "its row was not judged (the tracing's own, or not recorded)")
            self._drop_hinted(capture, time_us if judged else None, why)
            return False
        capture.hinted_s = None
        capture.baseline_us, capture.worst_factor = baseline, time_us / baseline
        needed = self._needed(capture.model_id, iteration_id)
        if needed > 1:  # short stretches seen: the next judged iterations decide
            self._pending[capture.model_id] = Pending(iteration_id, time_us, baseline, needed)
        else:
            capture.in_case = False  # a quiet run: the first slow iteration arms a capture
            self._captures += 1
        return True

    def _untrace(self, capture: Capture) -> None:
        """Disarm a dropped trace: its iterations granted, seen or not, are traced (slower) and never judged, nor the ones
        after them (the writing of the trace)."""
        self._armed = None
        disturbed = self._disturbed.setdefault(capture.model_id, set())
        disturbed.update(capture.captured)
        disturbed.update(i + 1 for i in capture.captured)

    def _drop_hinted(self, capture: Capture, row_us: float | None, why: str) -> None:
        self._untrace(capture)
        self._write({"kind": KIND_DROPPED, "model_id": capture.model_id, "iteration": capture.first_slow,
                     "interval_us": round((capture.hinted_s or 0.0) * 1e6, 1), "row_us": None if row_us is None else round(row_us, 1),
                     "baseline_us": round(capture.baseline_us, 1), "traced_in_case": capture.captured, "why": why})

    def _in_case_goes_on(self, capture: Capture, iteration_id: int, time_us: float, slow: bool) -> bool:
        """A judged iteration after an in-case trace's unconfirmed slow ones: steady drops the trace (False); slow counts,
        and the last one needed makes it a capture."""
        pending = self._pending[capture.model_id]
        if not slow:
            del self._pending[capture.model_id]
            self._drop_in_case(capture, pending)
            return False
        if pending.advance(iteration_id, time_us):
            del self._pending[capture.model_id]
            self._confirm_in_case(capture)
        return True

    def _drop_in_case(self, capture: Capture, pending: Pending) -> None:
        """The slow stretch was a short one: no capture; its line names what was traced in case."""
        self._untrace(capture)
        lone = self._lone(capture.model_id, pending)
        lone.captured, lone.times_us = capture.captured, capture.times_us
        self._emit(lone)

    def _confirm_in_case(self, capture: Capture) -> None:
        """Enough slow iterations in a row (the caller extends the capture with them): the trace armed in case is a capture."""
        capture.in_case = False
        capture.confirmed = True
        self._captures += 1

    @staticmethod
    def _anomaly(model_id: int, iteration_id: int, time_us: float, baseline: float) -> Capture:
        return Capture(KIND_ANOMALY, model_id, baseline, first_slow=iteration_id, last_slow=iteration_id,
                        slow_iterations=1, worst_factor=time_us / baseline)

    def _detected(self, model_id: int, iteration_id: int, time_us: float, baseline: float,
                  confirmed: Pending | None = None) -> None:
        anomaly = self._anomaly(model_id, iteration_id, time_us, baseline) if confirmed is None else \
            self._unconfirmed(model_id, confirmed)
        anomaly.confirmed = confirmed is not None
        if self._captures >= self.settings.max_captures:
            anomaly.uncaptured_reason = f"max_captures ({self.settings.max_captures}) reached"
        elif iteration_id < self._next_allowed:
            anomaly.uncaptured_reason = f"in the cooldown ({self.settings.cooldown} iterations) after the last capture"
        elif self._armed is not None and self._armed.kind == KIND_ANOMALY:
            anomaly.uncaptured_reason = "another capture was under way"
        if anomaly.uncaptured_reason is not None:
            if self._open is not None:
                self._emit(self._open)
            self._open = anomaly
            return
        self._captures += 1
        self._armed = anomaly

    def _finish_done(self) -> None:
        capture = self._armed
        if capture is not None and len(capture.seen) >= self.settings.steps and not capture.in_case:
            self._next_allowed = max(capture.captured) + self.settings.cooldown + 1 if capture.kind == KIND_ANOMALY else 0
            self._armed = None
            if capture.kind == KIND_REFERENCE:
                self._finish_reference(capture)
            elif capture.slow_open:
                if self._open is not None:
                    self._emit(self._open)
                self._open = capture  # written when its slow stretch ends
            else:
                self._emit(capture)
        if self._open is not None and not self._open.slow_open:
            self._emit(self._open)
            self._open = None

    def _finish_reference(self, capture: Capture) -> None:
        if capture.times_us:
            self._traced_baseline[capture.model_id] = statistics.median(capture.times_us)
            capture.traced_us = self._traced_baseline[capture.model_id]
        self._write(capture.entry())
