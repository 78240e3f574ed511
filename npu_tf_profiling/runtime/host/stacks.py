"""``with_stack`` and ``gc_detect_threshold``: one background thread records what the host's Python does.

The step trace times the gap between iterations; these say what filled it.
Every 1/rate seconds the thread reads the training thread's frame from
``sys._current_frames()`` (the interpreter's own table; no ``setprofile`` or
``settrace``, which would cost every Python call) and notes (time, stack id);
a stack seen for the first time is written once with its frames. The same
thread writes the GC pauses ``gc_pauses`` collected. Lines go out in batches
every FLUSH_S through the run's append-only writers, so a kill loses at most
that last batch. ``HostCollection`` (``collection``) starts, flushes and stops it with
the folder's other host parts. It stays a thread of its own, not a step of the counters
sampler's: one thread would do the same work (no CPU saved but a wake-up), at two rates (100 Hz here,
host_sys_usage_freq's 1-50 Hz there) that one loop would have to interleave. A counters sample
(~0.05 ms of CPU with every counter through /proc, ``counters``) is shorter than a stack sample
(~0.03-0.2 ms; RESULTS.md's host_recorder_cost row), so a merged loop would save only the wake-up.

The training thread is the main thread: the TF1 session loop, Estimator,
Keras ``fit`` and custom TF2 loops all run there in the scripts we profile.
A failure here is one warning; training never waits on this thread.
"""
from __future__ import annotations

import os
import sys
import sysconfig
import threading
import time
import warnings
from pathlib import Path
from types import FrameType
from typing import Optional

from npu_tf_profiling.raw_format import layout
from npu_tf_profiling.raw_format.append_writer import AppendOnlyWriter, StorageBudget
from npu_tf_profiling.raw_format.host_samples import Frame, encode_samples, encode_stack
from npu_tf_profiling.runtime.host.gc_pauses import GcPauseRecorder

RATE_HZ = 100
FLUSH_S = 0.5
MAX_DEPTH = 128  # frames kept per stack, innermost first kept (a deeper recursion's outer frames are dropped)
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _library_prefixes() -> tuple[str, ...]:
    """Where code that is not the script's own lives: the standard library, site-packages, this package."""
    paths = {sysconfig.get_paths().get(name) for name in ("stdlib", "platstdlib", "purelib", "platlib")}
    return tuple(sorted({os.path.abspath(p) + os.sep for p in paths if p} | {_PACKAGE_DIR + os.sep}))


class StackRecorder:
    """The stack sampler thread of one PROF_* folder (stacks with ``with_stack``, GC pauses with ``gc_detect_threshold``)."""

    def __init__(self, prof_dir: Path, device_id: int, budget: StorageBudget, with_stack: bool,
                 gc_threshold_ms: Optional[float], rate_hz: float = RATE_HZ) -> None:
        self.with_stack = with_stack
        self.interval_s = 1.0 / rate_hz if with_stack else 0.1  # GC only: wake to flush, and to stop soon at exit
        self._stacks = AppendOnlyWriter(layout.host_stacks_path(prof_dir, device_id), budget) if with_stack else None
        self._gc_writer = AppendOnlyWriter(layout.gc_pauses_path(prof_dir, device_id), budget) if gc_threshold_ms is not None else None
        self._gc = GcPauseRecorder(gc_threshold_ms) if gc_threshold_ms is not None else None
        self._ids: dict[tuple, int] = {}
        self._times: list[float] = []
        self._stack_ids: list[int] = []
        self._new_stacks: list[bytes] = []
        self._last_quick: tuple = ()
        self._last_id = -1
        self._libraries = _library_prefixes()
        self._lock = threading.Lock()  # a flush from the run's thread must not split a sample's two appends
        self._stop = threading.Event()
        self._target = threading.main_thread().ident
        self._thread = threading.Thread(target=self._run, name="npu_tf_profiling stack sampler", daemon=True)
        self.failure: Optional[str] = None

    def start(self) -> None:
        if self._gc is not None:
            self._gc.install()
        self._thread.start()

    def stop(self) -> None:
        """Stop sampling and write what is still waiting (at the run's close)."""
        self._stop.set()
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=5.0)
        if self._gc is not None:
            self._gc.remove()
        self.flush()
        for writer in (self._stacks, self._gc_writer):
            if writer is not None:
                writer.close()

    def _run(self) -> None:
        next_flush = time.monotonic() + FLUSH_S
        try:
            while not self._stop.is_set():
                time.sleep(self.interval_s)  # C-level sleep: Event.wait's Python condition costs more than a sample
                if self.with_stack:
                    with self._lock:
                        self._sample()
                if time.monotonic() >= next_flush:
                    next_flush = time.monotonic() + FLUSH_S
                    self.flush()
        except Exception as exc:  # noqa: BLE001 - profiling must never hurt the job
            self.failure = repr(exc)
            warnings.warn(f"npu_tf_profiling: host stack/GC recording stopped ({exc!r}); training continues",
                          RuntimeWarning, stacklevel=1)

    def _sample(self) -> None:
        frame = sys._current_frames().get(self._target)
        if frame is None:
            return
        now = time.time()
        back = frame.f_back
        # A training thread mostly waits inside one sess.run / function call: the same frame, so the same stack.
        # Compared by id (holding the frame would keep its locals alive), with its parent's to rule out reuse.
        quick = (id(frame), frame.f_code, frame.f_lineno, id(back), back.f_lineno if back is not None else 0)
        if quick == self._last_quick:
            self._times.append(now * 1e6)
            self._stack_ids.append(self._stack_ids[-1] if self._stack_ids else self._last_id)
            return
        key = []
        f: Optional[FrameType] = frame
        while f is not None and len(key) < MAX_DEPTH:
            key.append((f.f_code, f.f_lineno))
            f = f.f_back
        stack_key = tuple(key)
        stack_id = self._ids.get(stack_key)
        if stack_id is None:
            stack_id = self._ids[stack_key] = len(self._ids)
            self._new_stacks.append(self._describe(stack_id, stack_key))
        self._times.append(now * 1e6)
        self._stack_ids.append(stack_id)
        self._last_quick, self._last_id = quick, stack_id

    def _describe(self, stack_id: int, stack_key: tuple) -> bytes:
        frames: list[Frame] = [(code.co_filename, int(line or 0), code.co_name) for code, line in reversed(stack_key)]
        user = None
        for index in range(len(frames) - 1, -1, -1):
            file = frames[index][0]
            if not file.startswith("<") and not os.path.abspath(file).startswith(self._libraries):
                user = index
                break
        return encode_stack(stack_id, frames, user)

    def flush(self) -> None:
        """Write the samples and pauses taken since the last flush (every FLUSH_S, before reports, at stop)."""
        with self._lock:
            stacks, self._new_stacks = self._new_stacks, []
            times, ids, self._times, self._stack_ids = self._times, self._stack_ids, [], []
        if self._stacks is not None and (times or stacks):
            self._stacks.append(b"".join(stacks) + (encode_samples(times, ids) if times else b""))
        if self._gc is not None and self._gc_writer is not None:
            pauses = self._gc.drain()
            if pauses:
                self._gc_writer.append(pauses)

