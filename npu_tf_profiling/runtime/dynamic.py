"""`PROFILING_MODE=dynamic`: start and stop collection while the job runs, by editing a JSON file.

As torch_npu's dynamic_profile and MindSpore's DynamicProfilerMonitor do: the job
polls the file named by `PROFILING_DYNAMIC_CONFIG` every 2 s (one `stat` call, only
when a session runs and the interval has passed, so steps are not slowed). A
change to a valid options JSON with a window (`start_step`/`stop_step` or
`schedule`) starts one collection, into a new PROF_* folder, at that iteration.
A change during a collection is applied after it ends (the last one wins). An
invalid edit is logged with the reason to `log/monitor_dp_<host>_<pid>_rank_<id>.log`
beside the config and ignored; the job never dies. If the file is missing at start,
a template (valid, but with no window, so it collects nothing) is written.

`fp_point`/`bp_point` are applied when a graph's probes are wired, at its first
step: the points of the file's latest valid content then are used (even one with
no window yet, or the content present at start). Probes cannot be rewired while
the job runs, so a later edit of the points is logged in the monitor log and
recorded in that collection's info.json (`trace_points_fallback`).

The controller is a state machine (`DynamicState`), driven by two events through
one table, in the manner of torch.profiler's action map: a valid new config, and
the end of the collection's window. Each (state, event) pair names the next state
and the actions to take, in order.
"""
from __future__ import annotations

import enum
import json
import os
import socket
import threading
import time
from pathlib import Path
from typing import Mapping

from npu_tf_profiling.config import ENV_MODE, ProfilingOptions, ProfilingOptionsError, Resolution
from npu_tf_profiling.config.notices import warn_user
from npu_tf_profiling.config.schedule import CollectionWindow
from npu_tf_profiling.raw_format import own_files
from npu_tf_profiling.raw_format.errors import ForeignFileError
from npu_tf_profiling.runtime.collection import Collection
from npu_tf_profiling.runtime.device import device_id

ENV_DYNAMIC_CONFIG = "PROFILING_DYNAMIC_CONFIG"
DEFAULT_FILE_NAME = "profiler_config.json"
POLL_INTERVAL_S = 2.0
SOURCE_DYNAMIC = "dynamic"
TEMPLATE = {
    "output": "./npu_tf_profiling_dynamic",
    "training_trace": "on",
    "task_trace": "on",
}
TEMPLATE_HELP = "set start_step (and stop_step) or schedule to start a collection"


class DynamicState(enum.Enum):
    IDLE = "idle"  # no collection: the file is watched
    COLLECTING = "collecting"  # a collection is in force
    QUEUED = "collecting, next config queued"  # a newer config starts when the current window ends


class DynamicEvent(enum.Enum):
    NEW_CONFIG = "a valid config with a window was loaded"
    WINDOW_DONE = "the collection's window ended"


_D, _DE = DynamicState, DynamicEvent
# (state, event) -> (next state, actions). A pair not listed cannot happen (an event that
# needs a collection never comes without one).
TRANSITIONS: dict[tuple[DynamicState, DynamicEvent], tuple[DynamicState, tuple[str, ...]]] = {
    (_D.IDLE, _DE.NEW_CONFIG): (_D.COLLECTING, ("begin",)),
    (_D.COLLECTING, _DE.NEW_CONFIG): (_D.QUEUED, ("queue",)),
    (_D.QUEUED, _DE.NEW_CONFIG): (_D.QUEUED, ("queue",)),  # the last edit wins
    (_D.COLLECTING, _DE.WINDOW_DONE): (_D.IDLE, ("finish",)),
    (_D.QUEUED, _DE.WINDOW_DONE): (_D.COLLECTING, ("finish", "begin_queued")),
}


def dynamic_config_path(environ: Mapping[str, str] | None = None) -> Path | None:
    """The dynamic config file when PROFILING_MODE=dynamic, else None; a missing variable is an error."""
    environ = os.environ if environ is None else environ
    if environ.get(ENV_MODE, "").strip().lower() != "dynamic":
        return None
    raw = environ.get(ENV_DYNAMIC_CONFIG, "").strip()
    if not raw:
        raise ProfilingOptionsError(
            f"{ENV_MODE}=dynamic needs {ENV_DYNAMIC_CONFIG}=/path/to/{DEFAULT_FILE_NAME} (the file the job watches)"
        )
    try:
        path = Path(raw).expanduser().absolute()
    except RuntimeError:  # ~user of no such user
        raise ProfilingOptionsError(f"{ENV_DYNAMIC_CONFIG}={raw!r}: {raw.split('/', 1)[0]!r} names no user with a home folder") from None
    return path / DEFAULT_FILE_NAME if path.is_dir() else path


class DynamicController:
    """Watches one config file and hands out the Collection in force (or None)."""

    def __init__(self, path: Path, poll_interval_s: float | None = None) -> None:
        self.path = path
        # Read when the controller is made (not when this module loaded), so that a test can shorten it.
        self.poll_interval_s = POLL_INTERVAL_S if poll_interval_s is None else poll_interval_s
        self.log_path = path.parent / "log" / f"monitor_dp_{socket.gethostname()}_{os.getpid()}_rank_{device_id()}.log"
        self.state = DynamicState.IDLE
        self.current: Collection | None = None
        self._queued: Resolution | None = None
        self._latest: ProfilingOptions | None = None  # the file's latest valid content, window or not
        self._lock = threading.Lock()
        self._next_poll = 0.0
        self._log_refused = False
        self._latest_iteration = 0  # the newest iteration the job has recorded, for windows already past
        if not path.exists():
            self._write_template()
        self._mtime = self._stat()
        self._latest = self._read_quietly()
        self._log("INFO", f"watching {path} every {self.poll_interval_s:g} s")

    # ----- called from every session run -------------------------------------------------
    def poll(self) -> Collection | None:
        now = time.monotonic()
        if now >= self._next_poll:
            with self._lock:
                if now >= self._next_poll:
                    self._next_poll = now + self.poll_interval_s
                    self._check_file()
        return self.current

    def asked_points(self) -> dict[str, str]:
        """The fp_point/bp_point of the collection in force, else of the file's latest valid content."""
        options = self.current.run.resolution.options if self.current is not None else self._latest
        if options is None:
            return {"fp_point": "", "bp_point": ""}
        return {"fp_point": options.fp_point or "", "bp_point": options.bp_point or ""}

    def note(self, message: str) -> None:
        """Dynamic users read the monitor log (info.json of the collection records it too)."""
        self._log("WARNING", message)

    def after_iteration(self, iteration_id: int) -> None:
        """The recorder has seen iterations up to `iteration_id`: end the collection when its window is over."""
        self._latest_iteration = max(self._latest_iteration, iteration_id)
        current = self.current
        if current is None or not current.done_after(iteration_id):
            return
        with self._lock:
            if self.current is current:
                self._transition(DynamicEvent.WINDOW_DONE, None, f"at iteration {iteration_id}")

    # ----- the state machine --------------------------------------------------------------
    def _transition(self, event: DynamicEvent, resolution: Resolution | None, detail: str = "") -> None:
        """Move along TRANSITIONS (under the lock) and run the actions it names."""
        self.state, actions = TRANSITIONS[(self.state, event)]
        for action in actions:
            if action == "begin":
                self._begin(resolution)
            elif action == "queue":
                self._queued = resolution
                self._log("INFO", "a collection is running; the new config starts when it ends")
            elif action == "finish":
                self._finish(detail)
            elif action == "begin_queued":
                queued, self._queued = self._queued, None
                self._begin(queued)

    def _finish(self, detail: str) -> None:
        current = self.current
        assert current is not None
        current.run.close()
        current.run.write_reports()
        self._log("INFO", f"collection done {detail}: {current.run.prof_dir}")
        self.current = None

    # ----- internals ----------------------------------------------------------------------
    def _write_template(self) -> None:
        """Create the missing config file; a name that exists as a link (a dangling one too) is not written through."""
        path = self.path
        foreign = own_files.describe_foreign(path)
        if foreign is not None:
            raise ProfilingOptionsError(
                f"{ENV_DYNAMIC_CONFIG}: {path} is {foreign}, which leads to no file; the template is not written "
                "through it (point the variable at a real file, or remove the link)"
            )
        try:
            if not path.parent.is_dir():
                path.parent.mkdir(parents=True)
            fd = own_files.create_new(path)
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(json.dumps(TEMPLATE, indent=2) + "\n")
        except OSError as exc:
            raise ProfilingOptionsError(f"{ENV_DYNAMIC_CONFIG}: cannot create {path}: {exc.strerror or exc}") from None
        self._log("INFO", f"template written to {path}; {TEMPLATE_HELP}")

    def _stat(self) -> int | None:
        try:
            return os.stat(self.path).st_mtime_ns
        except OSError:
            return None

    def _read_quietly(self) -> ProfilingOptions | None:
        """The file's options at start, for its fp_point/bp_point; a bad file is reported when it next changes."""
        try:
            return ProfilingOptions.parse(self.path.read_text(encoding="utf-8"), origin=str(self.path))
        except (ProfilingOptionsError, OSError, UnicodeDecodeError):
            return None

    def _check_file(self) -> None:
        mtime = self._stat()
        if mtime == self._mtime:
            return
        self._mtime = mtime
        if mtime is None:
            self._log("WARNING", f"{self.path} disappeared; waiting for it to come back")
            return
        try:
            options = ProfilingOptions.parse(self.path.read_text(encoding="utf-8"), origin=str(self.path))
            self._latest = options
            if options.start_step is None and options.stop_step is None and options.schedule is None:
                self._log("INFO", f"load json success; no window: nothing to collect ({TEMPLATE_HELP})")
                return
            window = CollectionWindow.from_options(options)
            if window is not None and window.finished_after(self._latest_iteration):
                self._log("WARNING", f"load json success, but the window ({window.describe()}) has already passed: the job is at "
                                     f"iteration {self._latest_iteration}; nothing to collect, no folder made (set a later start_step)")
                return
            resolution = Resolution(options=options, source=SOURCE_DYNAMIC, output_dir=options.resolve_output())
        except (ProfilingOptionsError, OSError, UnicodeDecodeError) as exc:
            self._log("ERROR", f"invalid config ignored: {exc}")
            return
        self._log("INFO", f"load json success: {options.to_json()}")
        self._transition(DynamicEvent.NEW_CONFIG, resolution)

    def _begin(self, resolution: Resolution | None) -> None:
        assert resolution is not None
        self.current = Collection.start(resolution, fresh=True)
        self._log("INFO", f"collection armed: {resolution.options.to_json()} -> {self.current.run.prof_dir}")

    def _log(self, level: str, message: str) -> None:
        stamp = time.strftime("%Y-%m-%d %H:%M:%S")
        line = f"{stamp},{int(time.time() * 1000) % 1000:03d} [{level}] [{os.getpid()}] {message}\n"
        try:
            own_files.make_dir(self.log_path.parent)
            fd = own_files.open_append(self.log_path)
            try:
                os.write(fd, line.encode("utf-8", "backslashreplace"))
            finally:
                os.close(fd)
        except ForeignFileError as exc:
            if not self._log_refused:  # the log is a courtesy: one warning, then the job goes on without it
                self._log_refused = True
                warn_user(f"npu_tf_profiling: the dynamic-profiling log is not written: {exc}")
        except OSError:
            pass  # the log is a courtesy; never let it hurt the job


_CONTROLLERS: dict[Path, DynamicController] = {}
_CONTROLLERS_LOCK = threading.Lock()


def controller_for(path: Path) -> DynamicController:
    with _CONTROLLERS_LOCK:
        controller = _CONTROLLERS.get(path)
        if controller is None:
            controller = _CONTROLLERS[path] = DynamicController(path)
        return controller
